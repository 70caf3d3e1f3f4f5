//! The run's own cgroup (a harness-owned group of the unified, v2
//! hierarchy: [`dhp_procs::cgroup`], the same dhp-chaos makes per round):
//! every adapter joins it before it execs, and no helper leaves it by
//! `setsid`, a double fork or clearing its environment. At the end every
//! member is ended at once (`cgroup.kill`) and the group removed.

use dhp_procs::cgroup::Group;
use std::path::Path;
use std::sync::OnceLock;

/// This run's group, made on first use; `Err(why)` where none can be made
/// (no cgroup2 hierarchy with `cgroup.kill`, not root).
pub fn group() -> Result<&'static Group, &'static str> {
    static G: OnceLock<Result<Group, String>> = OnceLock::new();
    let g = G.get_or_init(|| {
        Group::create(&Path::new("dhp-conform").join(crate::pgroup::mark()))
            .map_err(|why| format!("no cgroup for the adapters ({why})"))
    });
    g.as_ref().map_err(String::as_str)
}

/// End every member of the run's group and remove it; how many there were.
pub fn kill_all(g: &Group) -> usize {
    let n = g.kill_all().len();
    g.remove();
    n
}
