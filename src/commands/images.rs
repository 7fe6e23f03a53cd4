//! `curate images`: base images made here, for machines with no registry.

use anyhow::Context;

use super::{Failure, exit};
use crate::exec::bootstrap::{Bootstrap, Outcome, bootstrap};
use crate::exec::connect;

pub fn images_bootstrap(
    suite: &str,
    tag: Option<&str>,
    mirror: Option<&str>,
    force: bool,
) -> Result<u8, Failure> {
    let mut b = Bootstrap::new(suite);
    if let Some(tag) = tag {
        b.tag = tag.to_string();
    }
    if let Some(mirror) = mirror {
        b.mirror = mirror.to_string();
    }
    b.force = force;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("async runtime")?;
    let outcome = runtime.block_on(async {
        let docker = connect().await?;
        bootstrap(&docker, &b, |m| eprintln!("{m}")).await
    });
    match outcome.map_err(anyhow::Error::from)? {
        Outcome::AlreadyThere => println!("{} is already there (--force makes it again)", b.tag),
        Outcome::Made { seconds, rootfs_bytes } => {
            println!(
                "made {} from Debian {} in {seconds:.0}s ({} MB root filesystem)",
                b.tag,
                b.suite,
                rootfs_bytes / 1_000_000
            )
        }
    }
    Ok(exit::OK)
}
