//! A cache of bare mirrors, one per repository, under `<cache>/repos/<owner>/<name>.git`. A repository
//! is cloned once, from a URL made from a template (`https://github.com/{repo}.git` by default), and
//! fetched again only when a commit asked for is missing. A template that names local directories
//! is read in place: no copy, and a mirror that lacks objects outside the commits asked for (a
//! snapshot without its largest files) still serves them.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use git2::{Delta, DiffFindOptions, DiffFormat, DiffOptions, Oid, Repository};

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("`{0}` is not a repository name of the form owner/name")]
    BadName(String),
    #[error("cannot get {repo} from {url}: {error}")]
    Clone { repo: String, url: String, error: String },
    #[error("commit {commit} is not in {repo} (fetched from {url})")]
    MissingCommit { repo: String, commit: String, url: String },
    #[error("{repo}: {error}")]
    Git { repo: String, error: String },
    #[error("mirror cache {dir}: {error}")]
    Io { dir: PathBuf, error: std::io::Error },
}

impl RepoError {
    /// Whether the data is at fault (a commit that does not exist) rather than the infrastructure.
    pub fn is_data_error(&self) -> bool {
        matches!(self, RepoError::BadName(_) | RepoError::MissingCommit { .. })
    }
}

/// A repository error as a task's: the data's fault (a commit that does not exist) is a rejection,
/// since retrying will not bring it; anything else is the infrastructure's, tried again next run.
impl From<RepoError> for crate::engine::stage::TaskError {
    fn from(e: RepoError) -> Self {
        if e.is_data_error() {
            crate::engine::stage::TaskError::reject(e.to_string())
        } else {
            crate::engine::stage::TaskError::Infra(Box::new(e))
        }
    }
}

pub struct Mirrors {
    /// Clone URL template: `{repo}` is `owner/name`, `{owner}` and `{name}` its parts.
    url: String,
    dir: PathBuf,
}

/// What became of a file between two commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathFate {
    Same,
    Renamed(String),
    Deleted,
}

fn split(repo: &str) -> Result<(&str, &str), RepoError> {
    let bad = || RepoError::BadName(repo.to_string());
    let (owner, name) = repo.split_once('/').ok_or_else(bad)?;
    let ok = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    if ok(owner) && ok(name) { Ok((owner, name)) } else { Err(bad()) }
}

impl Mirrors {
    /// `url` is the clone URL template; a template that is a relative path is taken relative to
    /// `base`. Mirrors live under `cache/repos`.
    pub fn new(url: &str, base: &Path, cache: &Path) -> Mirrors {
        let url = if url.contains("://") || Path::new(url).is_absolute() {
            url.to_string()
        } else {
            base.join(url).to_string_lossy().into_owned()
        };
        Mirrors { url, dir: cache.join("repos") }
    }

    pub fn url_for(&self, repo: &str) -> Result<String, RepoError> {
        let (owner, name) = split(repo)?;
        Ok(self.url.replace("{repo}", repo).replace("{owner}", owner).replace("{name}", name))
    }

    pub fn path_for(&self, repo: &str) -> Result<PathBuf, RepoError> {
        let (owner, name) = split(repo)?;
        Ok(self.dir.join(owner).join(format!("{name}.git")))
    }

    /// When the template is a local directory (not a URL): the repositories among `repos` that have
    /// no mirror in the cache and nothing at their clone path either, each with that path. Such a
    /// repository cannot be had by retrying, so a run says so before it starts.
    pub fn missing_local(&self, repos: &[&str]) -> Vec<(String, PathBuf)> {
        if self.url.contains("://") {
            return Vec::new();
        }
        repos
            .iter()
            .filter(|repo| self.path_for(repo).is_ok_and(|p| !p.exists()))
            .filter_map(|repo| self.url_for(repo).ok().map(|url| (repo.to_string(), PathBuf::from(url))))
            .filter(|(_, source)| !source.exists())
            .collect()
    }

    /// The mirror of `repo`, cloned on first use and fetched when one of `commits` is missing; a
    /// local one is opened where it is. Blocking: call it off the async runtime.
    pub fn open(&self, repo: &str, commits: &[&str]) -> Result<Mirror, RepoError> {
        let path = self.path_for(repo)?;
        let url = self.url_for(repo)?;
        if !self.url.contains("://") && !path.exists() && Path::new(&url).exists() {
            return open_in_place(repo, &url, commits);
        }
        let parent = path.parent().unwrap_or(&self.dir).to_path_buf();
        let io = |error| RepoError::Io { dir: parent.clone(), error };
        std::fs::create_dir_all(&parent).map_err(io)?;
        // One process and thread at a time per repository; the OS releases it if we die.
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.with_extension("git.lock"))
            .map_err(io)?;
        lock.lock().map_err(io)?;
        let repository = match Repository::open_bare(&path) {
            Ok(r) => r,
            Err(_) => clone(repo, &url, &path)?,
        };
        let missing = |r: &Repository| commits.iter().any(|c| resolve(r, c).is_err());
        if missing(&repository) {
            fetch(&repository, &url).map_err(|error| RepoError::Clone {
                repo: repo.to_string(),
                url: url.clone(),
                error: error.message().to_string(),
            })?;
        }
        for c in commits {
            if resolve(&repository, c).is_err() {
                return Err(RepoError::MissingCommit { repo: repo.to_string(), commit: c.to_string(), url });
            }
        }
        drop(lock);
        Ok(Mirror { repo: repository, name: repo.to_string(), path })
    }
}

/// A diff as the text of a unified patch.
pub(crate) fn patch_text(diff: &git2::Diff) -> Result<String, git2::Error> {
    let mut out = Vec::new();
    diff.print(DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        true
    })?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A local repository (bare or not) read where it is; every commit asked for must be in it.
fn open_in_place(name: &str, url: &str, commits: &[&str]) -> Result<Mirror, RepoError> {
    let git =
        |e: git2::Error| RepoError::Clone { repo: name.into(), url: url.into(), error: e.message().into() };
    let repository = Repository::open(url).map_err(git)?;
    for c in commits {
        if resolve(&repository, c).is_err() {
            return Err(RepoError::MissingCommit {
                repo: name.into(),
                commit: c.to_string(),
                url: url.into(),
            });
        }
    }
    let path = repository.path().to_path_buf();
    Ok(Mirror { repo: repository, name: name.to_string(), path })
}

fn resolve(repo: &Repository, commit: &str) -> Result<Oid, git2::Error> {
    Ok(repo.revparse_single(commit)?.peel_to_commit()?.id())
}

/// Every ref of the source, so PR heads (`refs/pull/*`) come along with branches and tags.
const REFSPEC: &str = "+refs/*:refs/*";

fn fetch(repo: &Repository, url: &str) -> Result<(), git2::Error> {
    let mut remote = repo.remote_anonymous(url)?;
    remote.fetch(&[REFSPEC], None, None)
}

/// Clones into a temporary directory beside the target and renames it into place, so a crash never
/// leaves a half-made mirror where a whole one is expected.
fn clone(name: &str, url: &str, path: &Path) -> Result<Repository, RepoError> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let failed = |error: git2::Error| RepoError::Clone {
        repo: name.into(),
        url: url.into(),
        error: error.message().into(),
    };
    let repo = Repository::init_bare(&tmp).map_err(failed)?;
    if let Err(e) = fetch(&repo, url) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(failed(e));
    }
    drop(repo);
    std::fs::rename(&tmp, path).map_err(|error| RepoError::Io { dir: path.to_path_buf(), error })?;
    Repository::open_bare(path).map_err(failed)
}

pub struct Mirror {
    repo: Repository,
    name: String,
    path: PathBuf,
}

impl Mirror {
    fn git(&self, error: git2::Error) -> RepoError {
        RepoError::Git { repo: self.name.clone(), error: error.message().to_string() }
    }

    fn commit(&self, commit: &str) -> Result<git2::Commit<'_>, RepoError> {
        let oid = resolve(&self.repo, commit).map_err(|e| self.git(e))?;
        self.repo.find_commit(oid).map_err(|e| self.git(e))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The commit where the histories of `a` and `b` part, as `git merge-base` finds it.
    pub fn merge_base(&self, a: &str, b: &str) -> Result<String, RepoError> {
        let (a, b) = (self.commit(a)?.id(), self.commit(b)?.id());
        self.repo.merge_base(a, b).map(|oid| oid.to_string()).map_err(|e| self.git(e))
    }

    /// The file's bytes at `commit`, or `None` if it does not exist there.
    pub fn file_at(&self, commit: &str, path: &str) -> Result<Option<Vec<u8>>, RepoError> {
        let tree = self.commit(commit)?.tree().map_err(|e| self.git(e))?;
        let entry = match tree.get_path(Path::new(path)) {
            Ok(entry) => entry,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(self.git(e)),
        };
        let object = entry.to_object(&self.repo).map_err(|e| self.git(e))?;
        Ok(object.as_blob().map(|b| b.content().to_vec()))
    }

    /// Seconds since the epoch of the commit's committer date.
    pub fn commit_time(&self, commit: &str) -> Result<i64, RepoError> {
        Ok(self.commit(commit)?.time().seconds())
    }

    /// Commit time of the newest commit, on the first-parent line back from `commit`, that changed
    /// any of `paths`: when the dependency spec took its current form. `None` past `limit` commits.
    pub fn last_change(
        &self,
        commit: &str,
        paths: &[String],
        limit: usize,
    ) -> Result<Option<i64>, RepoError> {
        let mut c = self.commit(commit)?;
        let ids = |c: &git2::Commit| -> Result<Vec<Option<git2::Oid>>, RepoError> {
            let tree = c.tree().map_err(|e| self.git(e))?;
            Ok(paths.iter().map(|p| tree.get_path(Path::new(p)).ok().map(|e| e.id())).collect())
        };
        for _ in 0..limit {
            let here = ids(&c)?;
            let Ok(parent) = c.parent(0) else { return Ok(Some(c.time().seconds())) };
            if ids(&parent)? != here {
                return Ok(Some(c.time().seconds()));
            }
            c = parent;
        }
        Ok(None)
    }

    /// The unified diff `from..to`, as `git diff` prints it.
    pub fn diff(&self, from: &str, to: &str) -> Result<String, RepoError> {
        self.diff_of(from, to, &[])
    }

    /// The unified diff `from..to` of `paths` only (every path when empty).
    pub fn diff_of(&self, from: &str, to: &str, paths: &[&str]) -> Result<String, RepoError> {
        let a = self.commit(from)?.tree().map_err(|e| self.git(e))?;
        let b = self.commit(to)?.tree().map_err(|e| self.git(e))?;
        let mut options = DiffOptions::new();
        for p in paths {
            options.pathspec(p).disable_pathspec_match(true);
        }
        let diff =
            self.repo.diff_tree_to_tree(Some(&a), Some(&b), Some(&mut options)).map_err(|e| self.git(e))?;
        patch_text(&diff).map_err(|e| self.git(e))
    }

    /// What became of `path` between two commits, with rename detection.
    pub fn fate(&self, from: &str, to: &str, path: &str) -> Result<PathFate, RepoError> {
        let a = self.commit(from)?.tree().map_err(|e| self.git(e))?;
        let b = self.commit(to)?.tree().map_err(|e| self.git(e))?;
        let mut diff = self.repo.diff_tree_to_tree(Some(&a), Some(&b), None).map_err(|e| self.git(e))?;
        diff.find_similar(Some(DiffFindOptions::new().renames(true))).map_err(|e| self.git(e))?;
        for delta in diff.deltas() {
            if delta.old_file().path() != Some(Path::new(path)) {
                continue;
            }
            return Ok(match delta.status() {
                Delta::Deleted => PathFate::Deleted,
                Delta::Renamed => PathFate::Renamed(
                    delta.new_file().path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default(),
                ),
                _ => PathFate::Same,
            });
        }
        Ok(PathFate::Same)
    }

    /// A working copy of `commit` in `dest` (which must not exist), with its own `.git`, so tools
    /// that read the version from git metadata work. Does not touch the network.
    /// A checkout of `commit` in `dest`: a repository that borrows the mirror's objects (git's
    /// alternates) rather than copying them, with the mirror's tags, so `git describe` and the
    /// history work there while only the commit's own files are read. Its `.git` is usable on
    /// this machine only: a build elsewhere gets the version from [`Mirror::describe`]. Files
    /// whose content the mirror lacks are left out, and returned.
    pub fn materialize(&self, commit: &str, dest: &Path) -> Result<Vec<String>, RepoError> {
        let oid = self.commit(commit)?.id();
        let io = |error| RepoError::Io { dir: dest.to_path_buf(), error };
        let fresh = Repository::init(dest).map_err(|e| self.git(e))?;
        let objects = std::fs::canonicalize(self.repo.path().join("objects")).map_err(io)?;
        let info = fresh.path().join("objects/info");
        std::fs::create_dir_all(&info).map_err(io)?;
        std::fs::write(info.join("alternates"), format!("{}\n", objects.display())).map_err(io)?;
        drop(fresh);
        let repo = Repository::open(dest).map_err(|e| self.git(e))?;
        let tags = self.repo.references_glob("refs/tags/*").map_err(|e| self.git(e))?;
        for tag in tags.flatten() {
            if let (Some(name), Some(target)) = (tag.name(), tag.target()) {
                repo.reference(name, target, true, "").map_err(|e| self.git(e))?;
            }
        }
        repo.set_head_detached(oid).map_err(|e| self.git(e))?;
        self.export_tree(commit, dest)
    }

    /// The submodules of `commit` as `.gitmodules` declares them and its tree pins them: path,
    /// repository (`owner/name`, read from the URL) and commit.
    pub fn submodules(&self, commit: &str) -> Result<Vec<Submodule>, RepoError> {
        let Some(text) = self.file_at(commit, ".gitmodules")? else { return Ok(Vec::new()) };
        let tree = self.commit(commit)?.tree().map_err(|e| self.git(e))?;
        let mut out = Vec::new();
        for (path, url) in gitmodules(&String::from_utf8_lossy(&text)) {
            let Ok(entry) = tree.get_path(Path::new(&path)) else { continue };
            if entry.kind() != Some(git2::ObjectType::Commit) {
                continue;
            }
            // `https://github.com/owner/name.git`, `git@github.com:owner/name`: its last two parts.
            let parts: Vec<&str> =
                url.trim_end_matches('/').trim_end_matches(".git").rsplit(['/', ':']).take(2).collect();
            if let [name, owner] = parts.as_slice() {
                out.push(Submodule { path, repo: format!("{owner}/{name}"), commit: entry.id().to_string() });
            }
        }
        Ok(out)
    }

    /// `git describe --tags` of `commit`: the nearest tag, and how far past it, for a build that
    /// reads its version from git but runs where the history is not.
    pub fn describe(&self, commit: &str) -> Option<String> {
        let object = self.commit(commit).ok()?.into_object();
        let mut options = git2::DescribeOptions::new();
        options.describe_tags();
        let described = object.describe(&options).ok()?;
        described.format(None).ok()
    }
}

/// A submodule pinned by a commit's tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Submodule {
    pub path: String,
    pub repo: String,
    pub commit: String,
}

/// `(path, url)` of each `[submodule]` section of a `.gitmodules` file.
fn gitmodules(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut path, mut url) = (None, None);
    let mut flush = |path: &mut Option<String>, url: &mut Option<String>| {
        if let (Some(p), Some(u)) = (path.take(), url.take()) {
            out.push((p, u));
        }
    };
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            flush(&mut path, &mut url);
        } else if let Some((key, value)) = line.split_once('=') {
            match key.trim() {
                "path" => path = Some(value.trim().to_string()),
                "url" => url = Some(value.trim().to_string()),
                _ => {}
            }
        }
    }
    flush(&mut path, &mut url);
    out
}

/// A commented file on both sides of a PR's fix, as text: the reviewed side, and where the fix
/// moved it with its text there (`None` when it is not UTF-8 or not there any more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcrossFix {
    pub before: String,
    /// `None` when the fix deleted the file.
    pub fixed: Option<(String, Option<String>)>,
}

/// Why a commented file cannot be read across the fix.
#[derive(Debug, thiserror::Error)]
pub enum AcrossFixError {
    #[error("the commented file is not UTF-8 text")]
    NotText,
    #[error("the commented file does not exist at the reviewed commit")]
    NotReviewed,
    #[error(transparent)]
    Repo(#[from] RepoError),
}

impl AcrossFixError {
    /// Whether the data is at fault, so that reading again cannot help ([`RepoError::is_data_error`]).
    pub fn is_data_error(&self) -> bool {
        match self {
            AcrossFixError::Repo(e) => e.is_data_error(),
            AcrossFixError::NotText | AcrossFixError::NotReviewed => true,
        }
    }
}

impl Mirrors {
    /// `path` of `repo` at the reviewed commit `head` and, following a rename, at the fix `fixed`:
    /// what the context stage shows of a comment and what the filter's fix facts read. Blocking.
    pub fn across_fix(
        &self,
        repo: &str,
        head: &str,
        fixed: &str,
        path: &str,
    ) -> Result<AcrossFix, AcrossFixError> {
        let mirror = self.open(repo, &[head, fixed])?;
        let bytes = mirror.file_at(head, path)?.ok_or(AcrossFixError::NotReviewed)?;
        let before = String::from_utf8(bytes).map_err(|_| AcrossFixError::NotText)?;
        let fixed_path = match mirror.fate(head, fixed, path)? {
            PathFate::Same => path.to_string(),
            PathFate::Renamed(to) => to,
            PathFate::Deleted => return Ok(AcrossFix { before, fixed: None }),
        };
        let after = mirror.file_at(fixed, &fixed_path)?.and_then(|b| String::from_utf8(b).ok());
        Ok(AcrossFix { before, fixed: Some((fixed_path, after)) })
    }
}

impl Mirrors {
    /// The reviewed commit `head` of `repo` checked out in `reviewed` and the fixed commit `fixed`
    /// in `fixed_dest` ([`Mirrors::checkout`] each); the mirror, for what else the caller reads
    /// of the two. Blocking.
    pub fn checkout_pair(
        &self,
        repo: &str,
        (head, fixed): (&str, &str),
        reviewed: &Path,
        fixed_dest: &Path,
    ) -> Result<Mirror, RepoError> {
        let mirror = self.open(repo, &[head, fixed])?;
        self.checkout(&mirror, head, reviewed)?;
        self.checkout(&mirror, fixed, fixed_dest)?;
        Ok(mirror)
    }

    /// A checkout of `commit` of `mirror` in `dest` ([`Mirror::materialize`]) with its submodules'
    /// files, each from the mirror of its own repository at the pinned commit. What could not be
    /// written is returned: files the mirrors lack, and a submodule whose mirror is not there or
    /// lacks its commit (by its path and why).
    pub fn checkout(&self, mirror: &Mirror, commit: &str, dest: &Path) -> Result<Vec<String>, RepoError> {
        let mut missing = mirror.materialize(commit, dest)?;
        for sub in mirror.submodules(commit)? {
            let files = self
                .open(&sub.repo, &[&sub.commit])
                .and_then(|m| m.export_tree(&sub.commit, &dest.join(&sub.path)));
            match files {
                Ok(lacking) => missing.extend(lacking.into_iter().map(|f| format!("{}/{f}", sub.path))),
                Err(e) => missing.push(format!(
                    "{} (submodule {} at {}: {e})",
                    sub.path,
                    sub.repo,
                    &sub.commit[..12]
                )),
            }
        }
        Ok(missing)
    }
}

/// Every file of a working copy, relative to `root` with `/` separators, without `.git`.
pub fn working_files(root: &Path) -> std::io::Result<Vec<String>> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out)?;
            } else if let Ok(rel) = path.strip_prefix(root) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(root, root, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_template_names_the_repositories_it_cannot_give() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("local/o/here.git")).unwrap();
        let mirrors = Mirrors::new("local/{repo}.git", dir.path(), &dir.path().join("cache"));
        let missing = mirrors.missing_local(&["o/here", "o/gone"]);
        assert_eq!(missing, vec![("o/gone".to_string(), dir.path().join("local/o/gone.git"))]);
        let remote = Mirrors::new("https://example.org/{repo}.git", dir.path(), &dir.path().join("cache"));
        assert!(remote.missing_local(&["o/gone"]).is_empty(), "a URL is for the network to answer");
    }
    use std::process::Command;

    /// Runs git in `dir` as a test author, and gives its output.
    fn git_in(dir: &Path) -> impl Fn(&[&str]) -> String + '_ {
        move |args| {
            let out = Command::new("git")
                .args(["-c", "user.name=T", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"])
                .args(args)
                .current_dir(dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        }
    }

    /// A real repository made with the git CLI: a file, a change to it, a rename, a deletion.
    fn fixture(dir: &Path) -> Vec<String> {
        let src = dir.join("src/acme/widgets");
        std::fs::create_dir_all(&src).unwrap();
        let git = git_in(&src);
        git(&["init", "-q", "-b", "main"]);
        let mut commits = Vec::new();
        let body: String = (0..20).map(|i| format!("v{i} = {i}\n")).collect();
        std::fs::write(src.join("a.py"), format!("x = 1\n{body}")).unwrap();
        std::fs::write(src.join("gone.py"), "pass\n").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "one"]);
        commits.push(git(&["rev-parse", "HEAD"]));
        std::fs::write(src.join("a.py"), format!("x = 2\n{body}")).unwrap();
        git(&["rm", "-q", "gone.py"]);
        git(&["mv", "a.py", "b.py"]);
        git(&["add", "."]);
        git(&["commit", "-qm", "two"]);
        commits.push(git(&["rev-parse", "HEAD"]));
        // A commit reachable only from a PR ref, as on GitHub.
        git(&["checkout", "-q", "-b", "pr"]);
        std::fs::write(src.join("c.py"), "z = 1\n").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "three"]);
        commits.push(git(&["rev-parse", "HEAD"]));
        git(&["update-ref", "refs/pull/1/head", "HEAD"]);
        git(&["checkout", "-q", "main"]);
        git(&["branch", "-q", "-D", "pr"]);
        commits
    }

    #[test]
    fn mirrors_read_files_diffs_fates_and_materialize() {
        let dir = tempfile::tempdir().unwrap();
        let commits = fixture(dir.path());
        let tagged = std::process::Command::new("git")
            .args(["-C", &dir.path().join("src/acme/widgets").to_string_lossy(), "tag", "v0.1", &commits[0]])
            .status()
            .unwrap();
        assert!(tagged.success());
        let mirrors = Mirrors::new("src/{repo}", dir.path(), &dir.path().join("cache"));
        let m = mirrors.open("acme/widgets", &[&commits[0], &commits[2]]).unwrap();
        assert!(!dir.path().join("cache/repos/acme/widgets.git").exists(), "a local mirror is read in place");

        assert!(m.file_at(&commits[0], "a.py").unwrap().unwrap().starts_with(b"x = 1\nv0 = 0\n"));
        assert_eq!(m.file_at(&commits[1], "a.py").unwrap(), None);
        assert_eq!(m.fate(&commits[0], &commits[1], "a.py").unwrap(), PathFate::Renamed("b.py".into()));
        assert_eq!(m.fate(&commits[0], &commits[1], "gone.py").unwrap(), PathFate::Deleted);
        let diff = m.diff(&commits[1], &commits[2]).unwrap();
        assert!(diff.contains("+++ b/c.py\n@@ -0,0 +1 @@\n+z = 1\n"), "{diff}");
        assert!(m.commit_time(&commits[0]).unwrap() > 1_600_000_000);
        let when = |paths: &[&str]| {
            let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
            m.last_change(&commits[2], &paths, 100).unwrap()
        };
        assert_eq!(
            when(&["b.py"]),
            Some(m.commit_time(&commits[1]).unwrap()),
            "b.py appeared in the second commit"
        );
        assert_eq!(when(&["c.py"]), Some(m.commit_time(&commits[2]).unwrap()));
        assert_eq!(
            when(&["never.txt"]),
            Some(m.commit_time(&commits[0]).unwrap()),
            "unchanged: the first commit"
        );

        let out = dir.path().join("work");
        m.materialize(&commits[2], &out).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("c.py")).unwrap(), "z = 1\n");
        assert!(out.join(".git").is_dir());
        let mut files = working_files(&out).unwrap();
        files.sort();
        assert_eq!(files, ["b.py", "c.py"], "the checkout's files, without .git");

        // The checkout borrows the mirror's objects and has its tags: its version can be told.
        assert!(m.describe(&commits[1]).unwrap().starts_with("v0.1-1-g"));
        let checkout = Repository::open(&out).unwrap();
        assert!(checkout.find_reference("refs/tags/v0.1").is_ok());
        assert!(!out.join(".git/objects/pack").read_dir().unwrap().any(|_| true), "no objects copied");
        let err = mirrors.open("acme/widgets", &["0123456789abcdef0123456789abcdef01234567"]).err().unwrap();
        assert!(matches!(err, RepoError::MissingCommit { .. }), "a local mirror is not fetched: {err}");

        // From a URL, the repository is cloned once: a second open neither clones nor fetches, so
        // the source can be gone.
        let url = format!("file://{}/src/{{repo}}", dir.path().display());
        let remote = Mirrors::new(&url, dir.path(), &dir.path().join("cache"));
        assert!(remote.open("acme/widgets", &[&commits[0], &commits[2]]).is_ok());
        assert!(dir.path().join("cache/repos/acme/widgets.git").is_dir());
        std::fs::rename(dir.path().join("src"), dir.path().join("moved")).unwrap();
        assert!(remote.open("acme/widgets", &[&commits[1]]).is_ok());
        let err = remote.open("acme/widgets", &["0123456789abcdef0123456789abcdef01234567"]).err().unwrap();
        assert!(matches!(err, RepoError::Clone { .. }), "a missing commit triggers a fetch: {err}");
    }

    #[test]
    fn a_checkout_brings_its_submodules_from_their_own_mirrors() {
        let dir = tempfile::tempdir().unwrap();
        let commits = fixture(dir.path());
        // A repository whose `vendor/widgets` is acme/widgets at its first commit, and whose
        // `vendor/gone` names a repository with no mirror.
        let app = dir.path().join("src/acme/app");
        std::fs::create_dir_all(&app).unwrap();
        let git = git_in(&app);
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(
            app.join(".gitmodules"),
            "[submodule \"vendor/widgets\"]\n\tpath = vendor/widgets\n\turl = https://github.com/acme/widgets.git\n\
             [submodule \"vendor/gone\"]\n\tpath = vendor/gone\n\turl = git@github.com:acme/gone\n",
        )
        .unwrap();
        std::fs::write(app.join("main.py"), "import sys\n").unwrap();
        git(&["add", "."]);
        git(&["update-index", "--add", "--cacheinfo", &format!("160000,{},vendor/widgets", commits[0])]);
        git(&["update-index", "--add", "--cacheinfo", &format!("160000,{},vendor/gone", commits[1])]);
        git(&["commit", "-qm", "app"]);
        let head = git(&["rev-parse", "HEAD"]);

        let mirrors = Mirrors::new("src/{repo}", dir.path(), &dir.path().join("cache"));
        let m = mirrors.open("acme/app", &[&head]).unwrap();
        let subs = m.submodules(&head).unwrap();
        assert_eq!(subs.len(), 2);
        assert_eq!((subs[0].path.as_str(), subs[0].repo.as_str()), ("vendor/widgets", "acme/widgets"));
        assert_eq!(subs[1].repo, "acme/gone");
        let out = dir.path().join("out");
        let missing = mirrors.checkout(&m, &head, &out).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("main.py")).unwrap(), "import sys\n");
        assert!(std::fs::read_to_string(out.join("vendor/widgets/a.py")).unwrap().starts_with("x = 1\n"));
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert!(missing[0].starts_with("vendor/gone (submodule acme/gone at "), "{missing:?}");
    }

    #[test]
    fn repository_names_cannot_escape_the_cache() {
        let m = Mirrors::new("https://example.invalid/{repo}.git", Path::new("."), Path::new("cache"));
        assert!(m.path_for("a/b").is_ok());
        assert!(m.path_for("../b").is_err());
        assert!(m.path_for("a/..").is_err());
        assert!(m.path_for("a").is_err());
        assert_eq!(m.url_for("o/n").unwrap(), "https://example.invalid/o/n.git");
    }
}
