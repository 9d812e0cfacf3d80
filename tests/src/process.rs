//! This process's own figures, as the idle-connection test and `bench load` report them:
//! resident memory and threads (from `/proc/self/status`), and the open-file limit they raise
//! to hold thousands of sockets.

/// Resident memory in bytes (`VmRSS`), if the system reports it.
pub fn resident_bytes() -> Option<u64> {
    status_field("VmRSS:").map(|kib| kib * 1024)
}

/// Threads of this process (`Threads`), if the system reports them.
pub fn threads() -> Option<u64> {
    status_field("Threads:")
}

/// The number after `name` in `/proc/self/status`.
fn status_field(name: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

/// Raises the soft open-file limit to at least `want` (and the hard one too when the process
/// may, as root may); the soft limit now in force.
pub fn raise_open_file_limit(want: u64) -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(u64::MAX);
    if soft >= want {
        return soft;
    }
    let hard = limit.maximum.unwrap_or(u64::MAX);
    if hard < want {
        let raised = Rlimit {
            current: Some(want),
            maximum: Some(want),
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            return want;
        }
    }
    let raised = Rlimit {
        current: Some(want.min(hard)),
        maximum: limit.maximum,
    };
    let _ = setrlimit(Resource::Nofile, raised);
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}
