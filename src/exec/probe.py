"""curate's behaviour probe: call the functions a fix changed and print what each call gives.

curate runs this in a PR's image, in /repo, once on the fixed commit and once on the reviewed one
(src/exec/probe.rs). It reads /curate-probe/request.json:

  module    the commented module's import name
  before    the commented file as reviewed; after: as fixed
  removed   the fix's lines in `before`; added: in `after`
  comment   the reviewer's text
  calls     null: choose the calls here (the fixed side); else make exactly these (the reviewed side)

and prints one line per call, `curate-probe: ` and then JSON: {"call", "from", "result"}. A call
is a Python expression over the module's names, taken from the comment, from the project's own
tests (with their local variables put in), or made up from the parameters of a changed function
and the literals around it. Each call is made twice; two different results make it `unstable`.

The sides may also run one after the other in one container, each its own process: then
CURATE_PROBE_SIDE names the side (fixed, reviewed, partial), each side's records go to
<side>.jsonl beside the request as well, and the reviewed and partial sides make the calls the
fixed side made. The partial side (the fix with the comment's change undone) only runs where some
call's result differs between the fixed and the reviewed side, and says `skipped` otherwise.
"""

import ast
import builtins
import contextlib
import io
import itertools
import json
import os
import re
import signal
import sys
import time
import types

PREFIX = "curate-probe: "
REQUEST = os.environ.get("CURATE_PROBE_REQUEST", "/curate-probe/request.json")
REPO = os.environ.get("CURATE_PROBE_REPO", "/repo")
SIDE = os.environ.get("CURATE_PROBE_SIDE")
UNSTABLE = "unstable"
CALL_SECONDS = 1.0
TOTAL_SECONDS = 20.0
FROM_COMMENT = 20
FROM_TESTS = 80
GENERATED_PER_FUNCTION = 40
KEYWORD_VALUES = 8
MAX_TEST_FILES = 300
PARAMETRIZED_ROWS = 8
MAX_REQUIRED = 3
RESULT_CHARS = 160

# Names a call may use besides the module's own.
SAFE_BUILTINS = {
    "None", "True", "False", "list", "dict", "set", "tuple", "frozenset", "int", "float", "str",
    "bytes", "bool", "range", "len", "sorted", "min", "max", "sum", "abs", "round", "complex",
}
GENERIC = [0, 1, -1, 2, 10, 0.5, -2.5, "", "a", "abc", "1.2.3", " ", [], [1], [1, 2, 3], [3, 1, 2],
           (), {}, {"a": 1}, None, True, False]
# Node types an expression may be built of: data, names, attributes, calls, arithmetic.
EVALUABLE = (
    ast.Expression, ast.Call, ast.Name, ast.Load, ast.Attribute, ast.Constant, ast.List, ast.Tuple,
    ast.Set, ast.Dict, ast.UnaryOp, ast.USub, ast.UAdd, ast.Not, ast.BinOp, ast.Add, ast.Sub,
    ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.keyword, ast.Subscript, ast.Slice,
)


class Slow(BaseException):
    """Raised in a call that runs over its time."""


def unique(items, key=repr):
    """`items` without repeats, in order; by `repr`, so that 1, 1.0 and True stay apart."""
    seen, out = set(), []
    for item in items:
        if key(item) not in seen:
            seen.add(key(item))
            out.append(item)
    return out


def emit(record):
    line = json.dumps(record, sort_keys=True)
    print(PREFIX + line, flush=True)
    if SIDE:
        with open(side_file(SIDE), "a", encoding="utf-8") as f:
            f.write(line + "\n")


def side_file(side):
    return os.path.join(os.path.dirname(REQUEST), side + ".jsonl")


def calls_of(side):
    """The call records an earlier side of this container wrote, in order."""
    try:
        with open(side_file(side), encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []
    return [r for r in records if isinstance(r, dict) and {"call", "from", "result"} <= set(r)]


def any_differs(fixed, reviewed):
    """Whether some call gave another result on the reviewed side, neither of them unstable."""
    results = {r["call"]: r["result"] for r in reviewed}
    return any(
        f["call"] in results and UNSTABLE not in (f["result"], results[f["call"]])
        and results[f["call"]] != f["result"]
        for f in fixed)


# ------------------------------------------------------------------ what the fix changed

def definitions(tree):
    """(qualified name, node) of the module's functions and of its classes' methods."""
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out.append((node.name + "." + item.name, item))
    return out


def spans(node, lines):
    start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    return any(start <= line <= node.end_lineno for line in lines)


def read_names(node):
    """Names and attribute names a definition reads."""
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            names.add(n.attr)
    return names


def docstring_lines(node):
    body = getattr(node, "body", None)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return set(range(body[0].lineno, body[0].end_lineno + 1))
    return set()


def touched(tree, source, lines):
    """Qualified names of the definitions the changed `lines` of `source` are in, not counting
    lines of comments, blank ones and docstrings (no call can see those); a changed module-level
    assignment or private helper brings in the definitions that read it."""
    text = source.splitlines()
    lines = {n for n in lines if 0 < n <= len(text) and text[n - 1].strip() and not text[n - 1].strip().startswith("#")}
    defs = definitions(tree)
    hit = {name for name, node in defs if spans(node, lines - docstring_lines(node))}
    assigned = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and spans(node, lines):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assigned |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    while True:
        private = {q.split(".")[-1] for q in hit if q.split(".")[-1].startswith("_")}
        wanted = (assigned | private) - {"__init__"}
        more = {name for name, node in defs if name not in hit and read_names(node) & wanted}
        if not more:
            return hit
        hit |= more


def callable_targets(qualified):
    """What a call must name to reach the touched definitions: function names, method names (as
    attributes), and classes whose constructor changed."""
    functions, methods, classes = set(), set(), set()
    # A test function of a commented test module is not code under test.
    qualified = [q for q in qualified if not q.split(".")[-1].startswith("test")]
    for q in qualified:
        if "." not in q:
            if not q.startswith("_"):
                functions.add(q)
            continue
        cls, name = q.split(".", 1)
        if name == "__init__" or name == "__post_init__":
            classes.add(cls)
        elif not name.startswith("_"):
            methods.add(name)
    return functions, methods, classes


# ------------------------------------------------------------------ calls

def evaluable(tree, known):
    return all(isinstance(n, EVALUABLE) for n in ast.walk(tree)) and all(
        n.id in known or n.id in SAFE_BUILTINS for n in ast.walk(tree) if isinstance(n, ast.Name))


def reaches(tree, targets):
    functions, methods, classes = targets
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if isinstance(f, ast.Name) and (f.id in functions or f.id in classes):
            return True
        if isinstance(f, ast.Attribute) and (f.attr in methods or f.attr in functions or f.attr in classes):
            return True
    return False


def calls_known(tree, known):
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in known
               for n in ast.walk(tree))


def echoes(call, comment):
    """Whether a call passes a value the comment names (`'1.0.0-rc.01'`, `max_length=0`, 25): a call
    of the project's tests about the comment's case, rather than another case of the same code."""
    flat = re.sub(r"\s+", "", comment)
    node = ast.parse(call, mode="eval")
    for n in ast.walk(node):
        if isinstance(n, ast.keyword) and n.arg and isinstance(n.value, ast.Constant):
            if (n.arg + "=" + repr(n.value.value)) in flat or (n.arg + "=" + str(n.value.value)) in flat:
                return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) >= 2:
            if n.value in comment:
                return True
        if isinstance(n, ast.Constant) and type(n.value) in (int, float) and abs(n.value) >= 2:
            if re.search(r"(?<![\w.])%s(?![\w.])" % re.escape(repr(n.value)), comment):
                return True
    return False


def balanced(text, at):
    """The end of the parenthesised part that opens at `text[at]`, or None."""
    depth = 0
    for i in range(at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def called_name(call):
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def examples_of(calls):
    """What the given calls pass: per (function name, argument position), the argument texts."""
    seen = {}
    for text in calls:
        for node in ast.walk(ast.parse(text, mode="eval")):
            if isinstance(node, ast.Call):
                for i, arg in enumerate(node.args):
                    values = seen.setdefault((called_name(node), i), [])
                    if ast.unparse(arg) not in values:
                        values.append(ast.unparse(arg))
    return seen


def filled(tree, known, examples):
    """A comment's call with placeholder names in it, `bump(v, "mnior")`: each unknown name passed
    as an argument is filled with what the project's tests pass there (a few ways at most)."""
    call = tree.body
    if not isinstance(call, ast.Call):
        return []
    name = called_name(call)
    holes = [i for i, a in enumerate(call.args)
             if isinstance(a, ast.Name) and a.id not in known and a.id not in SAFE_BUILTINS]
    # Only around a value of the comment's own: in `bump(v, "mnior")` the case is "mnior"; in
    # `dumps(c)` nothing is the comment's, and the tests' values would be another case.
    given = [a for a in list(call.args) + [k.value for k in call.keywords] if isinstance(a, ast.Constant)]
    if not given:
        return []
    # Plain values first: `'1.2.3'` says more in a fact than `Version(1, 2, 3)`.
    plain = lambda text: not isinstance(ast.parse(text, mode="eval").body, ast.Call)  # noqa: E731
    options = [sorted(examples.get((name, i), []), key=lambda t: not plain(t))[:3] for i in holes]
    if not holes or not all(options):
        return []
    out = []
    for combo in itertools.product(*options):
        new = copy(call)
        for i, value in zip(holes, combo):
            new.args[i] = ast.parse(value, mode="eval").body
        expr = ast.Expression(body=new)
        if evaluable(expr, known):
            out.append(ast.unparse(expr))
    return out[:3]


def comment_calls(comment, targets, known, examples):
    out = []
    for m in re.finditer(r"[A-Za-z_][\w.]*\(", comment):
        end = balanced(comment, m.end() - 1)
        if end is None:
            continue
        text = comment[m.start():end]
        for candidate in (text, text.split(".", 1)[-1]):
            try:
                tree = ast.parse(candidate, mode="eval")
            except SyntaxError:
                continue
            # The comment's own example may call any function of the module (`compare(a, b)` for a
            # change to ordering): whether the change causes its difference is checked later.
            if not (reaches(tree, targets) or calls_known(tree, known)):
                continue
            if evaluable(tree, known):
                out.append(ast.unparse(tree))
                break
            made = filled(tree, known, examples)
            if made:
                out += made
                break
    return out[:FROM_COMMENT]


class Inline(ast.NodeTransformer):
    """Puts the values of known local variables, and module aliases, into an expression."""

    def __init__(self, values, aliases):
        self.values = values
        self.aliases = aliases

    def visit_Name(self, node):
        if node.id in self.values:
            return self.values[node.id]
        if node.id in self.aliases:
            return ast.copy_location(ast.Name(id=self.aliases[node.id], ctx=ast.Load()), node)
        return node


def test_files(root):
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in (
            "node_modules", "site-packages", "venv", "build", "dist", "__pycache__"))
        for name in sorted(filenames):
            if name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")):
                found.append(os.path.join(dirpath, name))
    return found[:MAX_TEST_FILES]


def module_aliases(tree, module):
    """`import pkg.mod as m` and `import pkg as p`: local names for the module's top package."""
    top = module.split(".")[0]
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and (a.name == module or a.name == top):
                    aliases[a.asname] = a.name
    return aliases


def calls_in(body, targets, known, aliases, out, bound=None):
    """Calls of a target in a function body or module, with the body's simple locals (and the
    `bound` parameters) put in."""
    values = dict(bound or {})
    for stmt in body:
        inline = Inline(values, aliases)
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call) and reaches(node, targets):
                expr = inline.visit(ast.Expression(body=copy(node)))
                if evaluable(expr, known):
                    out.append(ast.unparse(expr))
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = inline.visit(ast.Expression(body=copy(stmt.value)))
            name = stmt.targets[0].id
            if evaluable(value, known):
                values[name] = value.body
            else:
                values.pop(name, None)


def parametrized(function, known):
    """The rows of a test's `@pytest.mark.parametrize("a, b", [(1, 2), ...])`, as name -> value
    expression, the first few; rows with values that are not plain data are left out."""
    rows = []
    for d in function.decorator_list:
        if not (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize"):
            continue
        if len(d.args) < 2 or not isinstance(d.args[1], (ast.List, ast.Tuple)):
            continue
        names = d.args[0]
        if isinstance(names, ast.Constant) and isinstance(names.value, str):
            names = [n.strip() for n in names.value.split(",") if n.strip()]
        elif isinstance(names, (ast.List, ast.Tuple)) and all(isinstance(n, ast.Constant) for n in names.elts):
            names = [n.value for n in names.elts]
        else:
            continue
        for row in d.args[1].elts[:PARAMETRIZED_ROWS]:
            values = row.elts if len(names) > 1 and isinstance(row, (ast.Tuple, ast.List)) else [row]
            if len(values) == len(names) and all(evaluable(ast.Expression(body=v), known) for v in values):
                rows.append(dict(zip(names, values)))
    return rows


def copy(node):
    return ast.parse(ast.unparse(node), mode="eval").body


def tests_calls(module, targets, known):
    out = []
    for path in test_files(REPO):
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        aliases = module_aliases(tree, module)
        calls_in(tree.body, targets, known, aliases, out)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for bound in parametrized(node, known) or [None]:
                    calls_in(node.body, targets, known, aliases, out, bound)
    return unique(out)[:FROM_TESTS]


# ------------------------------------------------------------------ made-up calls

def literals(comment, defs):
    """Strings and numbers from the comment and the changed definitions' bodies, first seen first."""
    found = []
    for m in re.finditer(r"'([^'\n]{0,40})'|\"([^\"\n]{0,40})\"|(?<![\w.])(-?\d+(?:\.\d+)?)(?![\w.])", comment):
        if m.group(3) is not None:
            number = m.group(3)
            found.append(float(number) if "." in number else int(number))
        else:
            found.append(m.group(1) if m.group(1) is not None else m.group(2))
    for node in defs:
        # Messages are not inputs: the text of a raise, of an f-string, or with spaces in it.
        messages = {id(n) for m in ast.walk(node) if isinstance(m, (ast.Raise, ast.JoinedStr)) for n in ast.walk(m)}
        body = node.body[1:] if ast.get_docstring(node, clean=False) is not None else node.body
        for n in (n for stmt in body for n in ast.walk(stmt)):
            if not isinstance(n, ast.Constant) or type(n.value) not in (str, int, float) or id(n) in messages:
                continue
            if isinstance(n.value, str) and (len(n.value) > 24 or " " in n.value.strip()):
                continue
            found.append(n.value)
    return unique(found)


CONTAINERS = {"list": (list, tuple), "sequence": (list, tuple), "iterable": (list, tuple),
              "collection": (list, tuple), "tuple": (tuple, list), "dict": (dict,), "mapping": (dict,)}
SCALARS = {"str": (str,), "bool": (bool,), "int": (int,), "float": (int, float)}


def fits(annotation, value):
    """Whether `value` suits a parameter annotated `annotation` (by its text: no names resolved)."""
    if annotation is None:
        return True
    text = ast.unparse(annotation).lower()
    outer = re.split(r"[\[|,]", text)[0].strip().split(".")[-1]
    if "optional" in outer:
        try:
            inner = ast.parse(ast.unparse(annotation).split("[", 1)[-1][:-1], mode="eval").body
        except SyntaxError:
            return True
        return value is None or fits(inner, value)
    if value is None:
        return "none" in text
    for word, types_ in CONTAINERS.items():
        if word in outer:
            return isinstance(value, types_)
    for word, types_ in SCALARS.items():
        if word in outer:
            return isinstance(value, types_) and (word == "bool" or not isinstance(value, bool))
    return True


def made_up(name, node, pool):
    """Calls of function (or class) `name` whose definition is `node`, with values from `pool`:
    every required parameter given, earliest pool values first; then each optional one set alone."""
    args = node.args
    params = args.posonlyargs + args.args
    if params and params[0].arg in ("self", "cls"):
        params = params[1:]
    split = len(params) - len(args.defaults) if args.defaults else len(params)
    positional, optional = params[:split], params[split:]
    keyword = [a for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
    optional += [a for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    required = positional + keyword
    if len(required) > MAX_REQUIRED:
        return []
    choices = [[v for v in pool if fits(p.annotation, v)] or pool for p in required]
    combos = sorted(itertools.product(*[range(len(c)) for c in choices]), key=lambda ix: (sum(ix), ix))

    def render(values, extra=()):
        parts = [repr(v) for v in values[:len(positional)]]
        parts += [p.arg + "=" + repr(v) for p, v in zip(keyword, values[len(positional):])]
        parts += [k + "=" + repr(v) for k, v in extra]
        return name + "(" + ", ".join(parts) + ")"

    out = [render([choices[i][j] for i, j in enumerate(ix)]) for ix in combos[:GENERATED_PER_FUNCTION]]
    base = [c[0] for c in choices]
    for p in optional:
        values = [v for v in pool if fits(p.annotation, v)][:KEYWORD_VALUES]
        out += [render(base, [(p.arg, v)]) for v in values]
    return out


# ------------------------------------------------------------------ making the calls

def short(text):
    text = re.sub(r" at 0x[0-9a-fA-F]+", "", text)
    return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS] + "…"


def on_alarm(signum, frame):
    raise Slow()


def make(call, namespace):
    """What one call gives, described (`returns …`, `yields …`, `raises E: …`, `runs over 1 s`),
    and as it came: ("value", v), ("items", list) or ("raised", exception); None when it ran over."""
    signal.signal(signal.SIGALRM, on_alarm)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
            try:
                value = eval(call, dict(namespace))
                if is_iterator(value):
                    items = list(itertools.islice(value, 20))
                    return "yields " + short(repr(items)), ("items", items)
                return "returns " + short(repr(value)), ("value", value)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except Slow:
        return "runs over %g s" % CALL_SECONDS, None
    except BaseException as e:  # noqa: BLE001 - every outcome of the code under test is a result
        message = short(str(e).splitlines()[0] if str(e) else "")
        return "raises " + type(e).__name__ + (": " + message if message else ""), ("raised", e)


def literal(value):
    """`value` as Python source that reads back as an equal value of the same type, or None."""
    text = repr(value)
    try:
        back = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if type(back) is not type(value) or back != value or len(text) > 200:
        return None
    return text


def check(call, outcome, module_name, namespace):
    """A pytest file that checks `call` gives `outcome`: the imports it needs and one test, or None
    when the outcome cannot be written down (an object without a literal form, a timeout)."""
    if outcome is None:
        return None
    kind, value = outcome
    top = module_name.split(".")[0]
    names = sorted({n.id for n in ast.walk(ast.parse(call, mode="eval"))
                    if isinstance(n, ast.Name) and n.id in namespace and n.id not in SAFE_BUILTINS})
    imports = []
    for name in names:
        if name == top:
            imports.append("import " + top)
        elif name == module_name.split(".")[-1] and "." in module_name:
            imports.append("from %s import %s" % (module_name.rsplit(".", 1)[0], name))
        else:
            imports.append("from %s import %s" % (module_name, name))
    if kind == "raised":
        error = type(value)
        if getattr(builtins, error.__name__, None) is not error:
            owner = sys.modules.get(error.__module__)
            if owner is None or getattr(owner, error.__name__, None) is not error:
                return None
            imports.append("from %s import %s" % (error.__module__, error.__name__))
        body = "    with pytest.raises(%s):\n        %s\n" % (error.__name__, call)
        imports.insert(0, "import pytest")
    else:
        text = literal(value)
        if text is None or (isinstance(value, float) and value != value):
            return None
        shown = "list(%s)" % call if kind == "items" else call
        body = "    assert %s == %s\n" % (shown, text)
    return "\n".join(imports) + "\n\n\ndef test_observed_call():\n" + body


def is_iterator(value):
    return isinstance(value, types.GeneratorType) or (
        hasattr(value, "__next__") and hasattr(value, "__iter__") and not isinstance(value, (str, bytes)))


def main():
    with open(REQUEST, encoding="utf-8") as f:
        request = json.load(f)
    if SIDE in ("reviewed", "partial"):
        fixed = calls_of("fixed")
        if SIDE == "partial" and not any_differs(fixed, calls_of("reviewed")):
            emit({"skipped": "no call differs"})
            return
        request["calls"] = [[r["from"], r["call"]] for r in fixed]
    module_name = request["module"]
    sys.path.insert(0, REPO)
    try:
        module = __import__(module_name, fromlist=["_"])
    except BaseException as e:  # noqa: BLE001
        emit({"error": "cannot import %s: %s: %s" % (module_name, type(e).__name__, short(str(e)))})
        return
    namespace = dict(vars(module))
    top = module_name.split(".")[0]
    namespace.setdefault(top, sys.modules.get(top, module))
    namespace.setdefault(module_name.split(".")[-1], module)
    calls = request.get("calls")
    planning = calls is None
    if planning:
        calls = plan(request, module_name, set(namespace))
    started = time.monotonic()
    for origin, call in calls:
        if time.monotonic() - started > TOTAL_SECONDS:
            emit({"stopped": "time"})
            break
        first, outcome = make(call, namespace)
        second, _ = make(call, namespace)
        record = {"call": call, "from": origin, "result": first if first == second else UNSTABLE}
        if planning and origin == "tests" and echoes(call, request["comment"]):
            record["echoes"] = True
        # The side that chose the calls (the fixed one) also writes each down as a test.
        written = check(call, outcome, module_name, namespace) if planning and first == second else None
        if written is not None:
            record["check"] = written
        emit(record)


def plan(request, module_name, known):
    def parse(text):
        try:
            return ast.parse(text or "")
        except (SyntaxError, ValueError):
            return ast.parse("")
    before, after = parse(request["before"]), parse(request["after"])
    qualified = touched(after, request["after"], set(request["added"])) | touched(
        before, request["before"], set(request["removed"]))
    targets = callable_targets(qualified)
    emit({"targets": sorted(qualified)})
    from_tests = tests_calls(module_name, targets, known)
    calls = [("comment", c) for c in comment_calls(request["comment"], targets, known, examples_of(from_tests))]
    calls += [("tests", c) for c in from_tests]
    defs = {name: node for name, node in definitions(before)}
    defs.update(definitions(after))
    changed = [defs[q] for q in sorted(qualified) if q in defs]
    pool = unique(literals(request["comment"], changed) + GENERIC)
    functions, _, classes = targets
    made = [(name, defs.get(name)) for name in sorted(functions)]
    made += [(cls, defs.get(cls + ".__init__") or defs.get(cls + ".__post_init__")) for cls in sorted(classes)]
    for name, node in made:
        if node is None:
            continue
        try:
            calls += [("generated", c) for c in made_up(name, node, pool)]
        except Exception as e:  # noqa: BLE001 - an odd signature costs its own calls, not the rest
            emit({"note": "no calls made up for %s: %s: %s" % (name, type(e).__name__, short(str(e)))})
    return unique(calls, key=lambda made: made[1])


if __name__ == "__main__":
    main()
