"""PR-Agent's `review` of the checked-out branch against a target branch, in the container.

PR-Agent's local git provider writes its review to review.md, and links each issue it raises to
nothing: a local repository has no web page for a line. Given a link of the form
PATH#L<start>-L<end> instead (what a hosted provider's links end in), each issue in review.md
says where it is, and curate reads the issue as a comment on that line.

Usage: review.py TARGET_BRANCH   (in the repository; the model's address in OPENAI__API_BASE)

The review ends itself after REVIEW_SECONDS (default 1500): the container outlives a `docker run`
that is killed, so the limit is kept inside it.
"""
import os
import signal
import sys

from pr_agent.git_providers.local_git_provider import LocalGitProvider


def line_link(self, relevant_file, start, end=None):
    return f"{relevant_file}#L{start}-L{end or start}"


LocalGitProvider.get_line_link = line_link
signal.alarm(int(os.environ.get("REVIEW_SECONDS", "1500")))

from pr_agent import cli  # noqa: E402  (after the provider is given its links)

sys.argv = ["pr-agent", "--pr_url", sys.argv[1], "review"]
cli.run()
