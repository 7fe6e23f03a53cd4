//! An instance's image made again from an exported benchmark's Dockerfiles, on a machine that has
//! the export but not the images its curation run built. The layers are the export's own: the tools
//! layer on the base image, the dependency layer with its `requirements.txt`, and the instance
//! layer with the repository at the reviewed commit as its `repo/` context. Each layer is built
//! only if its tag is missing, so instances of one repository share the dependency layer again.

use std::path::Path;

use bollard::Docker;
use serde::{Deserialize, Serialize};

use crate::exec::build::{build, build_lock};
use crate::exec::docker::{ExecError, image_exists};

/// Why an instance's image could not be made again.
#[derive(Debug, thiserror::Error)]
pub enum RebuildError {
    /// The daemon failed: the world's fault.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// The export's Dockerfiles do not say what they build on: the data's fault.
    #[error("the {0} Dockerfile has no FROM line")]
    NoFrom(&'static str),
    /// This machine lacks the base image; `curate images bootstrap` makes it.
    #[error("the base image `{0}` is not here: make it with `curate images bootstrap`")]
    NoBase(String),
    /// A layer's build failed (the export's recipe, or what it fetched, no longer builds).
    #[error("rebuilding the {what} layer `{tag}` failed: {message}\n{log_tail}")]
    Build { what: &'static str, tag: String, message: String, log_tail: String },
}

impl RebuildError {
    /// Whether the export is at fault, so that trying again cannot help.
    pub fn is_data_error(&self) -> bool {
        matches!(self, RebuildError::NoFrom(_))
    }
}

/// The export's recipe for one instance's image: the tag and the files' contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedEnvironment {
    pub image: String,
    pub tools: String,
    pub deps: String,
    pub instance: String,
    pub requirements: String,
}

/// The image a Dockerfile starts from.
pub fn from_image(dockerfile: &str) -> Option<&str> {
    dockerfile.lines().find_map(|l| l.trim().strip_prefix("FROM ")).map(str::trim)
}

/// One image of the three, and what its build needs.
struct Layer<'a> {
    tag: &'a str,
    dockerfile: &'a str,
    files: &'a [(&'a str, &'a [u8])],
    tree: Option<(&'a str, &'a Path)>,
    what: &'static str,
}

/// Makes `env.image` unless it exists, building the layers it stands on that are missing.
/// `checkout` is the repository at the reviewed commit. Errors say which layer failed and how.
pub async fn ensure(docker: &Docker, env: &ExportedEnvironment, checkout: &Path) -> Result<(), RebuildError> {
    if image_exists(docker, &env.image).await? {
        return Ok(());
    }
    let deps_tag = from_image(&env.instance).ok_or(RebuildError::NoFrom("instance"))?;
    let tools_tag = from_image(&env.deps).ok_or(RebuildError::NoFrom("dependency"))?;
    let base = from_image(&env.tools).ok_or(RebuildError::NoFrom("tools"))?;
    if !image_exists(docker, base).await? {
        return Err(RebuildError::NoBase(base.to_string()));
    }
    let requirements = [("requirements.txt", env.requirements.as_bytes())];
    let layers = [
        Layer { tag: tools_tag, dockerfile: &env.tools, files: &[], tree: None, what: "tools" },
        Layer { tag: deps_tag, dockerfile: &env.deps, files: &requirements, tree: None, what: "dependency" },
        Layer {
            tag: &env.image,
            dockerfile: &env.instance,
            files: &[],
            tree: Some(("repo", checkout)),
            what: "instance",
        },
    ];
    for l in layers {
        let _guard = build_lock(l.tag).await;
        if image_exists(docker, l.tag).await? {
            continue;
        }
        if let Err(f) = build(docker, l.tag, l.dockerfile, l.files, l.tree).await? {
            let (what, tag) = (l.what, l.tag.to_string());
            return Err(RebuildError::Build { what, tag, message: f.message, log_tail: f.log_tail });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layer_below_is_the_from_line() {
        assert_eq!(
            from_image("# x\nFROM curate/tools:bookworm-v3\nRUN true\n"),
            Some("curate/tools:bookworm-v3")
        );
        assert_eq!(from_image("RUN true\n"), None);
    }
}
