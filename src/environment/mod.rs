//! Executable environments (the paper's section 4.2.2): what a Python project at a commit needs to
//! build and test ([`detect`]), and the layered images that give it that ([`recipe`]): the base
//! image, a tools layer (venv, uv, current build backends), a dependency layer keyed by the
//! repository and its dependency spec and pinned to the PR's date, and the instance layer with the
//! repository at the reviewed commit installed in editable mode.

pub mod detect;
pub mod memory;
pub mod model_repair;
pub mod rebuild;
pub mod recipe;
pub mod related;
pub mod repair;
pub mod tree_image;
