//! The image a checkout other than the reviewed one runs in.
//!
//! A project with compiled extensions is built once, in its instance image, at the reviewed
//! commit. A run copies the tree under test over `/repo`, which replaces the Python files but not
//! what the build made from the C or Cython sources: a fix in `_speedups.c` would run the reviewed
//! extension on both sides, and its tests fail on both. So a tree whose compiled sources differ
//! from the reviewed ones runs in an image of its own: the instance image with the tree copied in
//! and the project's install run again, made once per content of those sources and reused.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::exec::build::{build_lock, commit_layer};
use crate::exec::docker::{ExecError, image_exists};
use crate::exec::hosts::Hosts;

/// Endings of the files a build compiles (or includes) rather than Python imports.
const COMPILED: [&str; 13] =
    [".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".pyx", ".pxd", ".pxi", ".rs", ".f", ".f90"];

/// Why the image of a tree could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TreeImageError {
    /// The daemon failed: the world's fault.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// A checkout could not be read.
    #[error("cannot read the checkout to compare its compiled sources: {0}")]
    Read(#[source] std::io::Error),
    /// The tree's sources do not build with the project's install: the tree's fault.
    #[error("the project does not build with {changed} changed: {message}\n{log_tail}")]
    Build { changed: String, message: String, log_tail: String },
}

impl TreeImageError {
    /// Whether the tree is at fault, so that trying again cannot help.
    pub fn is_data_error(&self) -> bool {
        matches!(self, TreeImageError::Build { .. })
    }
}

/// Whether a path is one a build compiles.
pub fn is_compiled_source(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    COMPILED.iter().any(|ending| lower.ends_with(ending))
}

/// The compiled sources whose content differs between `base` and `tree` (on either side only,
/// too), in path order.
pub fn compiled_changes(base: &Path, tree: &Path) -> std::io::Result<Vec<String>> {
    let compiled = |root: &Path| -> std::io::Result<Vec<String>> {
        Ok(crate::repo::working_files(root)?.into_iter().filter(|p| is_compiled_source(p)).collect())
    };
    let mut paths = compiled(base)?;
    paths.extend(compiled(tree)?);
    paths.sort();
    paths.dedup();
    let mut changed = Vec::new();
    for path in paths {
        if std::fs::read(base.join(&path)).ok() != std::fs::read(tree.join(&path)).ok() {
            changed.push(path);
        }
    }
    Ok(changed)
}

/// The tag of `image` with `tree`'s compiled sources `changed` built in by `install`.
fn tag_for(image: &str, install: &str, tree: &Path, changed: &[String]) -> String {
    let mut hash = Sha256::new();
    hash.update(format!("{image}\n{install}\n").as_bytes());
    for path in changed {
        hash.update(path.as_bytes());
        hash.update(std::fs::read(tree.join(path)).unwrap_or_default());
        hash.update(b"\n");
    }
    let key = hex::encode(hash.finalize());
    let repository = image.split_once(':').map_or(image, |(r, _)| r);
    format!("{repository}-rebuilt:{}", &key[..16])
}

/// The image `tree` runs in. `image` was built from `base` (the reviewed checkout); `install` is
/// the project's install command when the image compiled it (`None`: nothing was compiled, and
/// every tree runs in `image`). A tree whose compiled sources are the reviewed ones runs in
/// `image` too.
pub async fn image_for(
    hosts: &Hosts,
    image: &str,
    install: Option<&str>,
    base: &Path,
    tree: &Path,
) -> Result<String, TreeImageError> {
    let Some(install) = install else { return Ok(image.to_string()) };
    let changed = compiled_changes(base, tree).map_err(TreeImageError::Read)?;
    image_with(hosts, image, Some(install), tree, &changed).await
}

/// The image `tree` runs in when the files `changed` (repository-relative, of any kind) are what
/// differs from the checkout `image` was built from: `image` unless some of them are compiled
/// sources and `install` says how the image compiled them.
pub async fn image_with(
    hosts: &Hosts,
    image: &str,
    install: Option<&str>,
    tree: &Path,
    changed: &[String],
) -> Result<String, TreeImageError> {
    let changed: Vec<String> = changed.iter().filter(|p| is_compiled_source(p)).cloned().collect();
    let (Some(install), false) = (install, changed.is_empty()) else { return Ok(image.to_string()) };
    let tag = tag_for(image, install, tree, &changed);
    let docker = hosts.home().await?;
    let _built_once = build_lock(&tag).await;
    if image_exists(&docker, &tag).await? {
        return Ok(tag);
    }
    match commit_layer(&docker, image, &tag, tree, "/repo", install).await? {
        Ok(()) => {
            hosts.built(0, &docker, &tag).await?;
            Ok(tag)
        }
        Err(failure) => Err(TreeImageError::Build {
            changed: changed.join(", "),
            message: failure.message,
            log_tail: crate::text::last_lines(&failure.log_tail, 30),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn only_compiled_sources_that_differ_are_changes() {
        let base = tree(&[("pkg/_speed.c", "int a;"), ("pkg/core.py", "x = 1"), ("pkg/h.pxd", "cdef int b")]);
        let fixed = tree(&[
            ("pkg/_speed.c", "int a = 2;"),
            ("pkg/core.py", "x = 2"),
            ("pkg/h.pxd", "cdef int b"),
            ("pkg/new.pyx", "def f(): pass"),
        ]);
        assert_eq!(compiled_changes(base.path(), fixed.path()).unwrap(), ["pkg/_speed.c", "pkg/new.pyx"]);
        assert!(compiled_changes(base.path(), base.path()).unwrap().is_empty());
    }

    #[test]
    fn the_tag_follows_the_changed_sources_content() {
        let (a, b) = (tree(&[("m.c", "int a;")]), tree(&[("m.c", "int b;")]));
        let changed = vec!["m.c".to_string()];
        let tag = tag_for("curate-env/pkg:0123", "pip install -e .", a.path(), &changed);
        assert!(tag.starts_with("curate-env/pkg-rebuilt:"), "{tag}");
        assert_eq!(tag, tag_for("curate-env/pkg:0123", "pip install -e .", a.path(), &changed));
        assert_ne!(tag, tag_for("curate-env/pkg:0123", "pip install -e .", b.path(), &changed));
        assert_ne!(tag, tag_for("curate-env/pkg:0123", "python setup.py build_ext", a.path(), &changed));
    }

    #[tokio::test]
    async fn a_pure_python_project_or_an_unchanged_build_runs_in_the_image() {
        let (a, b) = (tree(&[("m.c", "int a;")]), tree(&[("m.c", "int b;")]));
        let hosts = Hosts::new(Vec::new(), None);
        // No install: nothing was compiled; no Docker host is asked.
        assert_eq!(image_for(&hosts, "img:1", None, a.path(), b.path()).await.unwrap(), "img:1");
        assert_eq!(image_for(&hosts, "img:1", Some("make"), a.path(), a.path()).await.unwrap(), "img:1");
    }
}
