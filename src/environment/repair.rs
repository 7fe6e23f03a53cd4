//! Environment repair, as the paper's install-script audit does it but by rules: a failed build or
//! verification is read for its first real error, and a rule that recognises it changes the recipe
//! (a system package, a missing distribution, a later pin for one package) for another try.
//!
//! Every rule here was met on real pull requests (`datasets/real/`); what no rule covers is
//! rejected with the first real error line, never a caret or a hint.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

/// Changes to the heuristic recipe, gathered over the repairs of one environment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Fixes {
    /// Debian packages installed in the dependency layer (headers, libraries, tools).
    pub system_packages: BTreeSet<String>,
    /// Distributions added to the requirements, resolved at the pin's date like the rest.
    pub requirements: BTreeSet<String>,
    /// Packages resolved at their newest instead of at the pin's date: an old release that does
    /// not build or run on this Python.
    pub unpinned: BTreeSet<String>,
    /// Packages whose exact pins (`==`) are dropped: the project's files pin them in ways that
    /// cannot all hold (one pin per Python version, read together).
    pub relaxed: BTreeSet<String>,
    /// Distributions installed again at the pin's date: one already there (the installer's own,
    /// say) is newer and lacks a module the project imports from it.
    pub reinstalled: BTreeSet<String>,
    /// A later date to resolve at, when more than one release of the pin's date does not build on
    /// this Python: the first date its wheels were common.
    pub pinned_no_earlier_than: Option<String>,
    /// Another Debian suite (so another Python) than the one of the pin's date.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    /// Environment variables the dependency and editable installs see.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The project is built in place (`setup.py build_clib build_ext --inplace`) and imported from its
    /// checkout, not installed in editable mode.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub in_place: bool,
    /// Dependencies built from source get a setuptools of the era of their `setup.py`
    /// ([`LEGACY_BUILD_SETUPTOOLS`]): new enough for the installer's legacy build requirement,
    /// old enough to have what such a `setup.py` imports. The project's own install is untouched.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub legacy_build_tools: bool,
    /// Extras of the project itself installed with it (`.[extra]`), named by an error.
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub extras: BTreeSet<String>,
}

/// The pytest that still reads a `[pytest]` section of setup.cfg.
const OLD_CONFIG_PYTEST: &str = "pytest<4";

/// The setuptools that builds a dependency's old `setup.py`: at least 40.8.0, which the installer
/// asks for when a source distribution names no build backend, and before 46.0, which removed
/// `setuptools.Feature` (`pkg_resources` went later still).
pub const LEGACY_BUILD_SETUPTOOLS: &str = "setuptools>=40.8.0,<46";

/// One change a rule proposes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fix {
    SystemPackages {
        packages: Vec<String>,
        because: String,
    },
    Requirement {
        distribution: String,
        because: String,
    },
    Unpin {
        package: String,
        because: String,
    },
    Relax {
        package: String,
        because: String,
    },
    Reinstall {
        distribution: String,
        because: String,
    },
    Repin {
        to: String,
        because: String,
    },
    /// Another Python: the build failed on the one of the pin's date in a way no rule knows.
    Python {
        suite: String,
        python: String,
        because: String,
    },
    Env {
        name: String,
        value: String,
        because: String,
    },
    BuildInPlace {
        because: String,
    },
    /// Dependencies' source builds get [`LEGACY_BUILD_SETUPTOOLS`].
    LegacyBuildTools {
        because: String,
    },
    /// An extra of the project itself, installed with it.
    Extra {
        extra: String,
        because: String,
    },
}

impl Fixes {
    /// Adds `fix`; `false` when it changes nothing (the same repair twice would loop).
    pub fn add(&mut self, fix: &Fix) -> bool {
        match fix {
            Fix::SystemPackages { packages, .. } => {
                packages.iter().fold(false, |new, p| self.system_packages.insert(p.clone()) | new)
            }
            Fix::Requirement { distribution, .. } => self.requirements.insert(distribution.clone()),
            Fix::Unpin { package, .. } => self.unpinned.insert(package.clone()),
            Fix::Relax { package, .. } => self.relaxed.insert(package.clone()),
            Fix::Reinstall { distribution, .. } => {
                let new = self.reinstalled.insert(distribution.clone());
                self.requirements.insert(distribution.clone()) | new
            }
            Fix::Repin { to, .. } => {
                let new = self.pinned_no_earlier_than.as_deref() != Some(to.as_str());
                self.pinned_no_earlier_than = Some(to.clone());
                new
            }
            Fix::Python { suite, .. } => {
                let new = self.suite.as_deref() != Some(suite.as_str());
                self.suite = Some(suite.clone());
                // The date wheels were common is the old Python's.
                self.pinned_no_earlier_than = None;
                new
            }
            Fix::BuildInPlace { .. } => !std::mem::replace(&mut self.in_place, true),
            Fix::LegacyBuildTools { .. } => !std::mem::replace(&mut self.legacy_build_tools, true),
            Fix::Extra { extra, .. } => self.extras.insert(extra.clone()),
            Fix::Env { name, value, .. } => {
                self.env.insert(name.clone(), value.clone()).as_ref() != Some(value)
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Fixes::default()
    }
}

/// Whether a line is noise around an error rather than the error: a caret or tilde underline, a
/// hint, a note, a bare location, a box-drawing margin.
fn noise(line: &str) -> bool {
    let t = line.trim().trim_start_matches(['│', '|', '╰', '─', '▶', '×', ' ']).trim();
    t.is_empty()
        || t.chars().all(|c| matches!(c, '^' | '~' | '-' | '=' | '+' | '|' | ' '))
        || ["hint:", "note:", "help:", "warning:", "[end of output]", "Traceback"]
            .iter()
            .any(|p| t.starts_with(p))
        || t.starts_with("File \"")
}

fn clean(line: &str) -> String {
    let t = line.trim().trim_start_matches(['│', '|', '╰', '─', '▶', '×', ' ']).trim();
    let t = t.strip_prefix("E ").map_or(t, str::trim);
    t.chars().take(240).collect()
}

/// The line of a build or run log that says what went wrong: a compiler's fatal error first, then
/// a package that failed to build, then the last Python exception, then the last line that is not
/// noise.
pub fn first_error(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let find = |pred: &dyn Fn(&str) -> bool| lines.iter().find(|l| pred(l)).map(|l| clean(l));
    if let Some(l) =
        find(&|l| l.contains("fatal error:") || l.contains("error: command") && l.contains("failed"))
    {
        return l;
    }
    // A dependency that failed to build; the project's own (`x @ file:///repo`) says more below.
    let dependency = |l: &str| {
        (l.contains("Failed to build `") || l.contains("Failed to download and build `"))
            && !l.contains("file://")
    };
    if let Some(l) = find(&dependency) {
        return l;
    }
    let exception = |l: &&&str| {
        let t = clean(l);
        let head = t.split(':').next().unwrap_or("");
        !head.contains(' ') && (head.ends_with("Error") || head.ends_with("Exception")) && !noise(l)
    };
    if let Some(l) = lines.iter().rev().find(exception) {
        return clean(l);
    }
    // Docker's own closing line says only that the command failed.
    let docker_own = |l: &str| l.starts_with("The command '") && l.contains("returned a non-zero code");
    lines.iter().rev().find(|l| !noise(l) && !docker_own(l)).map_or_else(String::new, |l| clean(l))
}

/// The Debian packages that provide a C header.
fn package_for_header(header: &str) -> Option<&'static [&'static str]> {
    const HEADERS: &[(&str, &[&str])] = &[
        ("ffi.h", &["libffi-dev"]),
        ("hdf5.h", &["libhdf5-dev", "pkg-config"]),
        ("H5public.h", &["libhdf5-dev", "pkg-config"]),
        ("jpeglib.h", &["libjpeg-dev"]),
        ("zlib.h", &["zlib1g-dev"]),
        ("png.h", &["libpng-dev"]),
        ("tiffio.h", &["libtiff-dev"]),
        ("ft2build.h", &["libfreetype-dev"]),
        ("libxml/", &["libxml2-dev"]),
        ("libxslt/", &["libxslt1-dev"]),
        ("yaml.h", &["libyaml-dev"]),
        ("libpq-fe.h", &["libpq-dev"]),
        ("pg_config", &["libpq-dev"]),
        ("openssl/", &["libssl-dev"]),
        ("sqlite3.h", &["libsqlite3-dev"]),
        ("bzlib.h", &["libbz2-dev"]),
        ("lzma.h", &["liblzma-dev"]),
        ("curl/curl.h", &["libcurl4-openssl-dev"]),
        ("gmp.h", &["libgmp-dev"]),
        ("cblas.h", &["libopenblas-dev"]),
        ("lcms2.h", &["liblcms2-dev"]),
        ("webp/", &["libwebp-dev"]),
        ("openjpeg", &["libopenjp2-7-dev"]),
        ("Python.h", &["python3-dev"]),
        ("mpi.h", &["libopenmpi-dev"]),
    ];
    HEADERS.iter().find(|(h, _)| header.starts_with(h) || header.ends_with(h)).map(|(_, p)| *p)
}

/// The Debian packages behind a pkg-config module or a linker's `-lNAME`.
fn package_for_library(name: &str) -> Option<&'static [&'static str]> {
    const LIBRARIES: &[(&str, &[&str])] = &[
        ("hdf5", &["libhdf5-dev", "pkg-config"]),
        ("ffi", &["libffi-dev", "pkg-config"]),
        ("libffi", &["libffi-dev", "pkg-config"]),
        ("z", &["zlib1g-dev"]),
        ("zlib", &["zlib1g-dev"]),
        ("jpeg", &["libjpeg-dev"]),
        ("png", &["libpng-dev"]),
        ("xml2", &["libxml2-dev"]),
        ("libxml-2.0", &["libxml2-dev", "pkg-config"]),
        ("xslt", &["libxslt1-dev"]),
        ("ssl", &["libssl-dev"]),
        ("crypto", &["libssl-dev"]),
        ("openssl", &["libssl-dev", "pkg-config"]),
        ("pq", &["libpq-dev"]),
        ("libpq", &["libpq-dev", "pkg-config"]),
        ("yaml", &["libyaml-dev"]),
        ("yaml-0.1", &["libyaml-dev", "pkg-config"]),
        ("sqlite3", &["libsqlite3-dev"]),
        ("openblas", &["libopenblas-dev"]),
        ("lapack", &["liblapack-dev"]),
    ];
    LIBRARIES.iter().find(|(l, _)| *l == name).map(|(_, p)| *p)
}

/// What the tools layer installs at today's release, ahead of the pin's date.
const TOOLS: [&str; 3] = ["pip", "setuptools", "uv"];

/// The distribution that provides a top-level module, where the two names differ.
pub fn distribution_for_module(module: &str) -> String {
    const DISTRIBUTIONS: &[(&str, &str)] = &[
        ("yaml", "PyYAML"),
        ("PIL", "Pillow"),
        ("dateutil", "python-dateutil"),
        ("bs4", "beautifulsoup4"),
        ("sklearn", "scikit-learn"),
        ("cv2", "opencv-python-headless"),
        ("attr", "attrs"),
        ("Crypto", "pycryptodome"),
        ("OpenSSL", "pyOpenSSL"),
        ("jwt", "PyJWT"),
        ("serial", "pyserial"),
        ("git", "GitPython"),
        ("dotenv", "python-dotenv"),
        ("zmq", "pyzmq"),
        ("pkg_resources", "setuptools"),
        ("google", "protobuf"),
        ("_pytest", "pytest"),
        ("magic", "python-magic"),
        ("Levenshtein", "python-Levenshtein"),
    ];
    DISTRIBUTIONS
        .iter()
        .find(|(m, _)| *m == module)
        .map_or_else(|| module.replace('_', "-"), |(_, d)| d.to_string())
}

/// What is between the first pair of `open`/`close` after `marker` in `line`.
fn between<'a>(line: &'a str, marker: &str, open: char, close: char) -> Option<&'a str> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let start = rest.find(open)? + open.len_utf8();
    let end = rest[start..].find(close)? + start;
    Some(&rest[start..end])
}

/// The package a wheels-only install found no wheel of for this Python (see the recipe's
/// `WHEELS_ONLY`).
pub fn wheel_missing(log: &str) -> Option<&str> {
    log.lines().find_map(|l| between(l, "Wheels are required for", '`', '`'))
}

/// For a package with no wheel for this Python at the pin's date `pin`: when that date is before
/// wheels for this Python were common, resolve at the date they were (one release of a package
/// there is many; its newest would be years past the pin).
pub fn repin_for_wheels(log: &str, so_far: &Fixes, pin: &str, wheels_since: &str) -> Option<Fix> {
    let package = wheel_missing(log)?;
    (pin < wheels_since && so_far.pinned_no_earlier_than.is_none()).then(|| Fix::Repin {
        to: wheels_since.to_string(),
        because: format!("{package} of the pin's date has no wheel for this Python"),
    })
}

/// `Because only numpy<=1.26.4 is available and you require numpy>=2.0.0rc1`, with the pin's date
/// as the filter: the package the project asks a release of that is newer than the date its spec
/// is pinned to.
fn newer_than_pin(log: &str) -> Option<String> {
    if !log.contains("filtered by `exclude-newer`") {
        return None;
    }
    log.lines().find_map(|line| {
        let rest = line.split("Because only ").nth(1).filter(|_| line.contains("you require "))?;
        let end = rest.find(['<', '>', '=', '!', '~', ' '])?;
        Some(rest[..end].trim().to_lowercase()).filter(|p| !p.is_empty())
    })
}

/// A dependency's source distribution whose build cannot get a setuptools that works for it: the
/// installer's legacy build requirement (`setuptools>=40.8.0`) is newer than the pin's date, or
/// today's setuptools lacks what an old `setup.py` imports (`pkg_resources`, `Feature`). Either
/// way, builds get a setuptools of the `setup.py`'s era, and the rest keeps the pin's date; tried
/// before moving the pin, which would not reach 2019 for a PR of 2016.
pub fn legacy_build_tools(log: &str, so_far: &Fixes) -> Option<Fix> {
    if so_far.legacy_build_tools {
        return None;
    }
    let building = log.contains("Failed to build `") || log.contains("Failed to download and build `");
    let why = if log.contains("No solution found when resolving: `setuptools>=40.8.0`") {
        "a dependency's source build needs setuptools 40.8.0 or later, newer than the pin's date"
    } else if building
        && (log.contains("No module named 'pkg_resources'")
            || log.contains("cannot import name 'Feature' from 'setuptools'"))
    {
        "a dependency's setup.py imports what today's setuptools no longer has"
    } else {
        return None;
    };
    Some(Fix::LegacyBuildTools { because: why.into() })
}

/// An error that names its own way out, `... must be installed via pip install name[extra]`:
/// that extra, of the project itself when `name` is the project's (`own`, which is then built
/// and can take extras), else the distribution with it.
pub fn named_extra(log: &str, own: Option<&str>, so_far: &Fixes) -> Option<Fix> {
    let normal = |n: &str| n.to_lowercase().replace(['_', '.'], "-");
    log.lines().find_map(|line| {
        let rest = line.split("pip install ").nth(1)?;
        let spec = rest.trim_start_matches(['\'', '"', '`']).split(['\'', '"', '`', ' ']).next()?;
        let (name, extra) = spec.trim_end_matches(['.', ',']).split_once('[')?;
        let extra = extra.strip_suffix(']')?;
        let valid = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_alphanumeric() || "-_.,".contains(c));
        if !valid(name) || !valid(extra) {
            return None;
        }
        let because = format!("the error names its way out: pip install {name}[{extra}]");
        if own.is_some_and(|o| normal(o) == normal(name)) {
            let extra = extra.to_lowercase();
            return (!so_far.extras.contains(&extra)).then_some(Fix::Extra { extra, because });
        }
        let distribution = format!("{name}[{extra}]");
        (!so_far.requirements.contains(&distribution)).then_some(Fix::Requirement { distribution, because })
    })
}

/// For a release newer than the pin's date that the project asks for: the spec took its form
/// before that release, and the PR (of `pr_date`) came after. Resolve as of the PR's date, which
/// keeps the rest of the dependencies near the pin, rather than take that package at its newest.
pub fn repin_to_pr_date(log: &str, so_far: &Fixes, pin: &str, pr_date: Option<&str>) -> Option<Fix> {
    let package = newer_than_pin(log)?;
    let date = pr_date.filter(|d| *d > pin && so_far.pinned_no_earlier_than.is_none())?;
    Some(Fix::Repin {
        to: date.to_string(),
        because: format!(
            "the project requires a release of {package} newer than the pin's date; the PR's date has it"
        ),
    })
}

/// What in a failed build's log says the interpreter's version is to blame: a distribution that
/// declares other Pythons, no wheel for this one, C code written against another's API, a module
/// or name this Python no longer has, syntax it no longer reads, code that checks the version or
/// says "this Python". Only such a failure moves the
/// build to another Python; any other spends a repair on an error the first Python did not have.
const VERSION_MARKERS: [&str; 29] = [
    "sys.version_info",
    "this python",
    "requires-python",
    "requires a different python",
    "python_requires",
    "the current python version",
    "not supported on python",
    "unsupported python",
    "only supports python",
    "python.h",
    "failed building wheel",
    "failed to build",
    "error: command",
    "gcc' failed",
    "cython",
    "longintrepr",
    "no module named 'distutils'",
    "no module named 'imp'",
    "no module named 'asynchat'",
    "has no attribute 'mapping'",
    "cannot import name 'mapping'",
    "cannot import name 'iterable'",
    "cannot import name 'getargspec'",
    "has no attribute 'getargspec'",
    "syntaxerror",
    "abi tag",
    "no wheels",
    "has no wheel",
    "required field \"lineno\" missing",
];

/// Whether the failure `log` is one another Python may cure ([`VERSION_MARKERS`]).
pub fn python_explains(log: &str) -> bool {
    let log = log.to_lowercase();
    VERSION_MARKERS.iter().any(|m| log.contains(m))
}

/// What the repair ladder ([`next_fix`]) reads of a failed build or verification.
pub struct Failed<'a> {
    pub log: &'a str,
    /// The step that failed was the editable install of a project with a setup.py.
    pub editable_setup_py: bool,
    /// The project's distribution name, when it is built (an extra of it may be named).
    pub own: Option<&'a str>,
    /// The project's own top-level modules.
    pub imports: &'a [String],
    /// The Python the recipe used (`3.11`).
    pub python: &'a str,
    pub pinned_to: &'a str,
    pub wheels_since: &'a str,
    /// The PR's date, when known.
    pub pr_date: Option<&'a str>,
    /// A Python that fits the project and was not tried yet: its suite and version.
    pub untried_python: Option<(&'static str, (u32, u32))>,
}

/// The next repair by rule after a failure, added to `fixes`: a rule of the log first (the build
/// tools of old source builds, an extra the error names, the repins, then [`diagnose`]), then the
/// setup.py built in place, then another Python when the failure is one of its version
/// ([`python_explains`]). Whether it changed anything, and the fix; `None` when no rule knows one
/// (the model may be asked).
pub fn next_fix(f: &Failed, fixes: &mut Fixes) -> Option<(bool, Fix)> {
    let rule = legacy_build_tools(f.log, fixes)
        .or_else(|| named_extra(f.log, f.own, fixes))
        .or_else(|| repin_for_wheels(f.log, fixes, f.pinned_to, f.wheels_since))
        .or_else(|| repin_to_pr_date(f.log, fixes, f.pinned_to, f.pr_date))
        .or_else(|| diagnose(f.log, f.imports, fixes, f.wheels_since));
    if let Some(fix) = rule.filter(|fix| fixes.add(fix)) {
        return Some((true, fix));
    }
    if f.editable_setup_py && !fixes.in_place {
        let fix = Fix::BuildInPlace {
            because: "the setup.py does not install in editable mode with today's setuptools".into(),
        };
        return Some((fixes.add(&fix), fix));
    }
    // A file of the checkout that is not there is not for another Python to bring.
    let error = first_error(f.log);
    let missing_file =
        error.contains("No such file or directory") && error.contains(crate::exec::testrun::REPO);
    let (suite, (major, minor)) = f.untried_python.filter(|_| !missing_file && python_explains(f.log))?;
    let fix = Fix::Python {
        suite: suite.into(),
        python: format!("{major}.{minor}"),
        because: format!("the failure on Python {} is one of its version", f.python),
    };
    Some((fixes.add(&fix), fix))
}

/// What a rule reads: a failed step's log, the project's own top-level modules (a missing one is
/// the project's fault, not a dependency to add), the repairs made already, and when wheels for
/// this Python became common.
struct Failure<'a> {
    log: &'a str,
    own: &'a [String],
    so_far: &'a Fixes,
    wheels_since: &'a str,
}

/// The rules [`diagnose`] asks, in order; the first that knows a repair gives it.
const RULES: [fn(&Failure) -> Option<Fix>; 8] = [
    unbuildable_release,
    missing_system_library,
    unsatisfiable_pins,
    newer_release,
    old_pytest_config,
    old_pytest,
    missing_module,
    hatch_editables,
];

/// A repair for a failed step's log, if a rule knows one ([`RULES`]). `own` are the project's own
/// top-level modules; `so_far` are the repairs made already; `wheels_since` is when wheels for this
/// Python became common.
pub fn diagnose(log: &str, own: &[String], so_far: &Fixes, wheels_since: &str) -> Option<Fix> {
    let failure = Failure { log, own, so_far, wheels_since };
    RULES.iter().find_map(|rule| rule(&failure))
}

/// A dependency's release of the pin's date that does not build here (no wheel for this Python):
/// the newest of that one package instead, which has one, rather than what compiling the old one
/// would need; a second such release means the pin's date is too old for this Python, so resolve
/// at a later date.
fn unbuildable_release(f: &Failure) -> Option<Fix> {
    for line in f.log.lines() {
        for marker in ["Failed to build `", "Failed to download and build `", "Wheels are required for `"] {
            let Some(spec) = line.split(marker).nth(1).and_then(|r| r.split('`').next()) else { continue };
            let package = spec.split(['=', '<', '>', '!', '~', ' ', '@']).next().unwrap_or("").trim();
            if package.is_empty() || package == "." || spec.contains("file://") {
                continue;
            }
            // Unpinned and still not building: what it lacks is for the rules below.
            if f.so_far.unpinned.contains(&package.to_lowercase()) {
                continue;
            }
            if !f.so_far.unpinned.is_empty() && f.so_far.pinned_no_earlier_than.is_none() {
                return Some(Fix::Repin {
                    to: f.wheels_since.to_string(),
                    because: format!(
                        "{spec} is the second release of the pin's date that does not build on this Python"
                    ),
                });
            }
            return Some(Fix::Unpin {
                package: package.to_lowercase(),
                because: format!("{spec} does not build on this Python"),
            });
        }
    }
    None
}

/// A header, library, compiler or pkg-config a build looked for: the Debian packages that have
/// it. The first line that names one decides.
fn missing_system_library(f: &Failure) -> Option<Fix> {
    f.log.lines().find_map(|line| system_fix_for_line(line, f.log))
}

fn system_fix_for_line(line: &str, log: &str) -> Option<Fix> {
    // `foo.c:3:10: fatal error: hdf5.h: No such file or directory`
    if let Some(header) = between(line, "fatal error:", ' ', ':').filter(|_| line.contains("No such file"))
        && let Some(packages) = package_for_header(header.trim())
    {
        return Some(system(packages, format!("a C header is missing: {}", header.trim())));
    }
    // pkg-config: `Package hdf5 was not found in the pkg-config search path`
    if let Some(name) = line.trim().strip_prefix("Package ").and_then(|r| r.split_whitespace().next())
        && line.contains("was not found in the pkg-config search path")
        && let Some(packages) = package_for_library(name)
    {
        return Some(system(packages, format!("pkg-config has no `{name}`")));
    }
    if line.contains("pkg-config: not found")
        || line.contains("pkg-config: command not found")
        || line.contains("pkg-config probably not installed")
    {
        // A build that looks its library up with pkg-config needs the library's headers too.
        let mut packages = vec!["pkg-config"];
        for (library, needs) in [("HDF5", "libhdf5-dev"), ("libffi", "libffi-dev"), ("libxml", "libxml2-dev")]
        {
            if log.contains(library) {
                packages.push(needs);
            }
        }
        return Some(system(&packages, "pkg-config is not installed".into()));
    }
    // `error: command 'x86_64-linux-gnu-g++' failed: No such file or directory`: C++ sources.
    if (line.contains("g++' failed: No such file") || line.contains("g++: not found"))
        || (line.contains("c++' failed: No such file") || line.contains("c++: not found"))
    {
        return Some(system(&["g++"], "a C++ compiler is needed".into()));
    }
    // Pillow: `The headers or library files could not be found for jpeg, a required dependency`
    if let Some(name) = line.split("could not be found for ").nth(1).and_then(|r| r.split([',', ' ']).next())
        && let Some(packages) = package_for_library(name)
    {
        return Some(system(packages, format!("the headers of {name} are missing")));
    }
    // `/usr/bin/ld: cannot find -lhdf5`
    if let Some(name) = line
        .split("cannot find -l")
        .nth(1)
        .map(|r| r.split_whitespace().next().unwrap_or("").trim_end_matches(':'))
        && let Some(packages) = package_for_library(name)
    {
        return Some(system(packages, format!("the linker cannot find -l{name}")));
    }
    // `libhdf5.so: cannot open shared object file`
    if let Some(lib) = line.split_whitespace().find(|w| w.starts_with("lib") && w.contains(".so"))
        && line.contains("cannot open shared object file")
    {
        let name = lib.trim_end_matches(':').trim_start_matches("lib").split(".so").next().unwrap_or("");
        if let Some(packages) = package_for_library(name) {
            return Some(system(packages, format!("a shared library is missing: {lib}")));
        }
    }
    None
}

/// `Because you require numpy==1.12 and numpy>=1.14.3, … unsatisfiable`: pins of the project's
/// files that cannot hold together (a static reading gathers every Python version's); also at the
/// end of a longer chain, `And because you require pytest==4.6.9, we can conclude …`.
fn unsatisfiable_pins(f: &Failure) -> Option<Fix> {
    f.log.lines().find_map(|line| {
        let rest = line
            .split("Because you require ")
            .nth(1)
            .or_else(|| line.split("because you require ").nth(1))?;
        let first = rest.split([',']).next().and_then(|r| r.split(" and ").next())?;
        let (package, _) = first.split_once("==").filter(|_| line.contains("unsatisfiable"))?;
        Some(Fix::Relax {
            package: package.trim().to_lowercase(),
            because: format!("the project's pins of {} cannot all hold", package.trim()),
        })
    })
}

/// A release newer than the pin's date, asked for by the project: that one package at its newest
/// (see [`repin_to_pr_date`] for the first try).
fn newer_release(f: &Failure) -> Option<Fix> {
    let package = newer_than_pin(f.log).filter(|p| !f.so_far.unpinned.contains(p))?;
    Some(Fix::Unpin {
        because: format!("the project requires a release of {package} newer than the pin's date"),
        package,
    })
}

/// A pytest newer than the project's configuration: `[pytest]` in setup.cfg is refused from pytest
/// 4 on, so the project's tests were run by an older one.
fn old_pytest_config(f: &Failure) -> Option<Fix> {
    (f.log.contains("[pytest] section in setup.cfg files is no longer supported")
        && !f.so_far.requirements.contains(OLD_CONFIG_PYTEST))
    .then(|| Fix::Requirement {
        distribution: OLD_CONFIG_PYTEST.into(),
        because: "the project configures pytest in a `[pytest]` section of setup.cfg, which pytest 4 refuses"
            .into(),
    })
}

/// Pytest of the pin's date that does not run on this Python.
fn old_pytest(f: &Failure) -> Option<Fix> {
    let log = f.log;
    (log.contains("AttributeError: __spec__")
        // Its assertion rewriting builds an AST the newer Python refuses.
        || log.contains("required field \"lineno\" missing from alias")
        || log.lines().any(|l| l.contains("_pytest/") && (l.contains("TypeError") || l.contains("AttributeError"))))
    .then(|| Fix::Unpin {
        package: "pytest".into(),
        because: "pytest of that date does not run on this Python".into(),
    })
}

/// A module missing at import or collection: the distribution of that name.
fn missing_module(f: &Failure) -> Option<Fix> {
    f.log.lines().find_map(|line| {
        let module = between(line, "No module named", '\'', '\'')?;
        let top = module.split('.').next().unwrap_or(module);
        if f.own.iter().any(|o| o == top) || top.is_empty() {
            return None;
        }
        // `pip._vendor.html5lib`: `pip` imports, so it is there, but not as of the pin's date;
        // likewise a module of what the tools layer installs today (`pkg_resources`).
        let distribution = distribution_for_module(top);
        if module.contains('.') || TOOLS.contains(&distribution.as_str()) {
            return Some(Fix::Reinstall {
                distribution,
                because: format!("the installed `{top}` is newer than the pin's date and has no `{module}`"),
            });
        }
        Some(Fix::Requirement { distribution, because: format!("the module `{top}` is not installed") })
    })
}

/// hatchling's editable install without build isolation.
fn hatch_editables(f: &Failure) -> Option<Fix> {
    (f.log.contains("editables") && f.log.contains("--no-build-isolation")).then(|| Fix::Requirement {
        distribution: "editables".into(),
        because: "hatchling's editable install needs it".into(),
    })
}

fn system(packages: &[&str], because: String) -> Fix {
    Fix::SystemPackages { packages: packages.iter().map(|p| p.to_string()).collect(), because }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_failure_a_version_explains_asks_for_another_python() {
        assert!(python_explains("ERROR: Package 'x' requires a different Python: 3.11.2 not in '<3.8'"));
        assert!(python_explains("numpy/core/src/x.c:12: fatal error: longintrepr.h: No such file"));
        assert!(python_explains("ImportError: cannot import name 'Mapping' from 'collections'"));
        assert!(python_explains("TypeError: required field \"lineno\" missing from alias"));
        assert!(python_explains("assert sys.version_info[:2] != (3, 11)\nAssertionError"));
        assert!(!python_explains(
            "RuntimeError: the watchdog backend must be installed via pip install project[watch]"
        ));
        assert!(!python_explains("FAILED tests/test_a.py::test_b - assert 1 == 2"));
    }

    fn failed(log: &str) -> Failed<'_> {
        Failed {
            log,
            editable_setup_py: false,
            own: None,
            imports: &[],
            python: "3.11",
            pinned_to: "2020-01-01T00:00:00Z",
            wheels_since: "2023-03-01T00:00:00Z",
            pr_date: None,
            untried_python: Some(("bullseye", (3, 9))),
        }
    }

    #[test]
    fn the_ladder_tries_a_rule_then_the_build_in_place_then_another_python_for_its_failures_only() {
        let mut fixes = Fixes::default();
        let rule = next_fix(&failed("ModuleNotFoundError: No module named 'yaml'"), &mut fixes);
        assert!(matches!(rule, Some((true, Fix::Requirement { .. }))), "{rule:?}");

        let editable = Failed { editable_setup_py: true, ..failed("error: invalid command 'develop'") };
        assert!(matches!(next_fix(&editable, &mut fixes), Some((true, Fix::BuildInPlace { .. }))));
        assert!(
            next_fix(&editable, &mut fixes).is_none(),
            "built in place already: no rule, and nothing another Python explains"
        );

        let version = "error: Package 'x' requires a different Python: 3.11.2 not in '<3.10'";
        let python = next_fix(&failed(version), &mut fixes);
        assert!(
            matches!(&python, Some((true, Fix::Python { suite, .. })) if suite == "bullseye"),
            "{python:?}"
        );
        let missing = "python: can't open file '/repo/setup.py': [Errno 2] No such file or directory";
        assert!(next_fix(&failed(missing), &mut Fixes::default()).is_none(), "a file the checkout lacks");
        let none_left = Failed { untried_python: None, ..failed(version) };
        assert!(next_fix(&none_left, &mut Fixes::default()).is_none());
    }

    const W: &str = "2023-01-01T00:00:00Z";

    #[test]
    fn the_first_error_is_not_a_caret_or_a_hint() {
        let compiler = "building 'h5py.defs' extension\ngcc -c h5py/defs.c\nh5py/api_compat.h:27:10: fatal error: hdf5.h: No such file or directory\n   27 | #include \"hdf5.h\"\n      |          ^~~~~~~~\ncompilation terminated.\nerror: command '/usr/bin/gcc' failed with exit code 1\n      ^^^^^^^^^^^^^^^^^^^^^\nhint: This usually indicates a problem with the package\n";
        assert_eq!(
            first_error(compiler),
            "h5py/api_compat.h:27:10: fatal error: hdf5.h: No such file or directory"
        );
        let uv = "  × Failed to build `numpy==1.16.1`\n  ├─▶ The build backend returned an error\nhint: `setuptools` was filtered by `exclude-newer`\n";
        assert_eq!(first_error(uv), "Failed to build `numpy==1.16.1`");
        let own = "× Failed to build `pillow @ file:///repo`\n  File \"setup.py\", line 1\nRequiredDependencyException: jpeg\nhint: This usually indicates a problem with the package\n";
        assert_eq!(first_error(own), "RequiredDependencyException: jpeg");
        let pytest = "ImportError while loading conftest '/repo/tests/conftest.py'.\ntests/conftest.py:3: in <module>\n    import simplejson\nE   ModuleNotFoundError: No module named 'simplejson'\n";
        assert_eq!(first_error(pytest), "ModuleNotFoundError: No module named 'simplejson'");
        assert_eq!(first_error("step one\nit broke here\n   ^^^\n"), "it broke here");
        let unsolvable = "  × No solution found when resolving dependencies:\n  ╰─▶ Because zzz was not found in the package registry, we can conclude that your requirements are unsatisfiable.\nThe command '/bin/sh -c uv pip install' returned a non-zero code: 1";
        assert!(
            first_error(unsolvable).starts_with("Because zzz was not found"),
            "{}",
            first_error(unsolvable)
        );
    }

    #[test]
    fn headers_and_libraries_become_debian_packages() {
        let fix =
            diagnose("x.c:1:10: fatal error: ffi.h: No such file or directory", &[], &Fixes::default(), W)
                .unwrap();
        assert_eq!(fix, system(&["libffi-dev"], "a C header is missing: ffi.h".into()));
        let Some(Fix::SystemPackages { packages, .. }) =
            diagnose("Package hdf5 was not found in the pkg-config search path.", &[], &Fixes::default(), W)
        else {
            panic!()
        };
        assert_eq!(packages, ["libhdf5-dev", "pkg-config"]);
        assert!(matches!(
            diagnose("/usr/bin/ld: cannot find -ljpeg: No such file", &[], &Fixes::default(), W),
            Some(Fix::SystemPackages { .. })
        ));
        assert_eq!(
            diagnose(
                "x.c:1:10: fatal error: frobnicate.h: No such file or directory",
                &[],
                &Fixes::default(),
                W
            ),
            None
        );
        let pillow = "RequiredDependencyException: jpeg\nThe headers or library files could not be found for jpeg,\na required dependency when compiling Pillow from source.";
        assert!(
            matches!(diagnose(pillow, &[], &Fixes::default(), W), Some(Fix::SystemPackages { packages, .. }) if packages == ["libjpeg-dev"])
        );
        let h5py = "Building h5py requires pkg-config unless the HDF5 path is explicitly specified\nerror: pkg-config probably not installed: FileNotFoundError(2)";
        let Some(Fix::SystemPackages { packages, .. }) = diagnose(h5py, &[], &Fixes::default(), W) else {
            panic!()
        };
        assert_eq!(packages, ["pkg-config", "libhdf5-dev"]);
        let gxx = "error: command 'x86_64-linux-gnu-g++' failed: No such file or directory";
        assert!(
            matches!(diagnose(gxx, &[], &Fixes::default(), W), Some(Fix::SystemPackages { packages, .. }) if packages == ["g++"])
        );
    }

    #[test]
    fn an_old_release_that_does_not_build_is_unpinned_alone() {
        let fix = diagnose("  × Failed to build `numpy==1.16.1`\n", &[], &Fixes::default(), W).unwrap();
        assert!(matches!(fix, Fix::Unpin { ref package, .. } if package == "numpy"), "{fix:?}");
        let fix = diagnose("AttributeError: __spec__\n", &[], &Fixes::default(), W).unwrap();
        assert!(matches!(fix, Fix::Unpin { ref package, .. } if package == "pytest"));
    }

    #[test]
    fn a_second_old_release_moves_the_pin_and_conflicting_pins_are_relaxed() {
        let mut so_far = Fixes::default();
        so_far.add(&Fix::Unpin { package: "kiwisolver".into(), because: String::new() });
        let fix = diagnose("error: Failed to download and build `numpy==1.16.1`", &[], &so_far, W).unwrap();
        assert!(matches!(fix, Fix::Repin { ref to, .. } if to == W), "{fix:?}");
        let nowheel = "hint: Wheels are required for `numpy` because building from source is disabled for `numpy` (i.e., with `--no-build-package numpy`)";
        let early = "2020-09-17T00:00:00Z";
        let fix = repin_for_wheels(nowheel, &Fixes::default(), early, W).unwrap();
        assert!(matches!(fix, Fix::Repin { ref to, .. } if to == W), "{fix:?}");
        assert_eq!(repin_for_wheels(nowheel, &Fixes::default(), "2024-01-01T00:00:00Z", W), None);
        let fix = diagnose(nowheel, &[], &Fixes::default(), W).unwrap();
        assert!(matches!(fix, Fix::Unpin { ref package, .. } if package == "numpy"), "{fix:?}");
        let newer = "cause: Because only numpy<=1.26.4 is available and you require numpy>=2.0.0rc1, we can conclude that your requirements are unsatisfiable.\nhint: `numpy` was filtered by `exclude-newer` to only include packages uploaded before 2024-06-06T10:21:05Z.";
        let fix = diagnose(newer, &[], &Fixes::default(), W).unwrap();
        assert!(matches!(fix, Fix::Unpin { ref package, .. } if package == "numpy"), "{fix:?}");
        let fix =
            repin_to_pr_date(newer, &Fixes::default(), "2024-06-06T10:21:05Z", Some("2024-07-30T00:00:00Z"));
        assert!(matches!(fix, Some(Fix::Repin { ref to, .. }) if to == "2024-07-30T00:00:00Z"), "{fix:?}");
        assert_eq!(
            repin_to_pr_date(newer, &Fixes::default(), "2024-06-06T10:21:05Z", Some("2024-01-01")),
            None
        );
        let conflict = "  ╰─▶ Because you require numpy==1.12 and numpy>=1.14.3, we can conclude that your requirements are unsatisfiable.";
        let fix = diagnose(conflict, &[], &Fixes::default(), W).unwrap();
        assert!(matches!(fix, Fix::Relax { ref package, .. } if package == "numpy"), "{fix:?}");
        // urllib3 1830: the exact pin at the end of a chain of reasons.
        let chain = "      And because you require pytest==4.6.9, we can conclude that your requirements are unsatisfiable.";
        let fix = diagnose(chain, &[], &Fixes::default(), W).unwrap();
        assert!(matches!(fix, Fix::Relax { ref package, .. } if package == "pytest"), "{fix:?}");
    }

    #[test]
    fn a_missing_module_is_its_distribution_unless_it_is_the_project() {
        let fix =
            diagnose("E   ModuleNotFoundError: No module named 'yaml'", &[], &Fixes::default(), W).unwrap();
        assert!(matches!(fix, Fix::Requirement { ref distribution, .. } if distribution == "PyYAML"));
        let fix = diagnose("No module named 'pip._vendor.html5lib'", &[], &Fixes::default(), W).unwrap();
        assert!(matches!(fix, Fix::Reinstall { ref distribution, .. } if distribution == "pip"), "{fix:?}");
        let fix = diagnose("No module named 'pkg_resources'", &[], &Fixes::default(), W).unwrap();
        assert!(matches!(fix, Fix::Reinstall { ref distribution, .. } if distribution == "setuptools"));
        assert_eq!(diagnose("No module named 'widgets'", &["widgets".into()], &Fixes::default(), W), None);
    }

    #[test]
    fn a_dependency_that_does_not_build_is_unpinned_before_its_compiler_is_installed() {
        let log = "  × Failed to build `pyzmq==23.2.0`\nerror: command 'x86_64-linux-gnu-g++' failed: No such file or directory\n";
        let fix = diagnose(log, &[], &Fixes::default(), W).unwrap();
        assert!(matches!(fix, Fix::Unpin { ref package, .. } if package == "pyzmq"), "{fix:?}");
        let mut so_far = Fixes::default();
        so_far.add(&fix);
        let fix = diagnose(log, &[], &so_far, W).unwrap();
        assert!(matches!(fix, Fix::SystemPackages { .. }), "unpinned and still failing: {fix:?}");
    }

    #[test]
    fn pytest_whose_assertion_rewriting_fails_on_a_newer_python_is_moved_to_its_newest() {
        let log = "  File \"/opt/venv/lib/python3.11/site-packages/_pytest/assertion/rewrite.py\", line 168, in exec_module\n    exec(co, module.__dict__)\nTypeError: required field \"lineno\" missing from alias\n";
        let fix = diagnose(log, &[], &Fixes::default(), W);
        assert!(matches!(fix, Some(Fix::Unpin { ref package, .. }) if package == "pytest"), "{fix:?}");
    }

    #[test]
    fn an_old_setup_py_of_a_dependency_gets_setuptools_of_its_era() {
        // werkzeug 927 (2016): uwsgi's sdist names no backend, and 40.8.0 is after the pin.
        let unsatisfiable = "error: Failed to download and build `uwsgi==2.0.12`\n  Caused by: Failed to resolve requirements from `setup.py` build\n  Caused by: No solution found when resolving: `setuptools>=40.8.0`\n";
        let fix = legacy_build_tools(unsatisfiable, &Fixes::default());
        assert!(matches!(fix, Some(Fix::LegacyBuildTools { .. })), "{fix:?}");
        // Python-Markdown 672 (2018): markupsafe 1.0 imports `Feature`, gone from today's setuptools.
        let feature = "error: Failed to build `markupsafe==1.0`\nImportError: cannot import name 'Feature' from 'setuptools' (/root/.cache/uv/builds-v0/x/setuptools/__init__.py)\n";
        assert!(legacy_build_tools(feature, &Fixes::default()).is_some());
        let pkg_resources = "error: Failed to build `cryptography==1.3.2`\nModuleNotFoundError: No module named 'pkg_resources'\n";
        let mut so_far = Fixes::default();
        let fix = legacy_build_tools(pkg_resources, &so_far).unwrap();
        assert!(so_far.add(&fix) && so_far.legacy_build_tools);
        assert_eq!(legacy_build_tools(pkg_resources, &so_far), None, "once is enough");
        // The project's own import of pkg_resources is no build of a dependency.
        let own = "ModuleNotFoundError: No module named 'pkg_resources'\n";
        assert_eq!(legacy_build_tools(own, &Fixes::default()), None);
    }

    #[test]
    fn a_setup_cfg_pytest_section_gets_the_pytest_that_reads_it() {
        let log = "Failed: [pytest] section in setup.cfg files is no longer supported, change to [tool:pytest] instead.\n";
        let fix = diagnose(log, &[], &Fixes::default(), W);
        assert!(
            matches!(fix, Some(Fix::Requirement { ref distribution, .. }) if distribution == "pytest<4"),
            "{fix:?}"
        );
        let mut so_far = Fixes::default();
        so_far.add(&fix.unwrap());
        assert!(!matches!(diagnose(log, &[], &so_far, W), Some(Fix::Requirement { .. })), "once");
    }

    #[test]
    fn an_error_that_names_an_extra_installs_it() {
        let log =
            "E   RuntimeError: the socks proxy support must be installed via `pip install httpkit[socks]`.\n";
        let fix = named_extra(log, Some("HttpKit"), &Fixes::default());
        assert!(matches!(fix, Some(Fix::Extra { ref extra, .. }) if extra == "socks"), "{fix:?}");
        let mut so_far = Fixes::default();
        assert!(so_far.add(&fix.unwrap()));
        assert_eq!(named_extra(log, Some("httpkit"), &so_far), None, "once");
        // Another project's extra is a requirement.
        let other = "ImportError: install it with pip install 'uvicorn[standard]'\n";
        let fix = named_extra(other, Some("httpkit"), &Fixes::default());
        assert!(
            matches!(fix, Some(Fix::Requirement { ref distribution, .. }) if distribution == "uvicorn[standard]")
        );
        assert_eq!(named_extra("pip install -e .\n", Some("httpkit"), &Fixes::default()), None);
    }

    #[test]
    fn a_repeated_fix_changes_nothing() {
        let mut fixes = Fixes::default();
        let fix = Fix::Requirement { distribution: "x".into(), because: String::new() };
        assert!(fixes.add(&fix));
        assert!(!fixes.add(&fix));
        assert!(!fixes.is_empty());
    }
}
