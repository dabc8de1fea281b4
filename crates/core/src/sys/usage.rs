//! Resource usage of this process (and, on Linux, of a child such as the embedded
//! server): CPU time from `getrusage`, peak resident memory, and machine facts
//! (vCPUs, memory) for the result's environment block.

use std::time::Duration;

/// CPU time (user + system) this process has used so far, all threads together.
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return Duration::ZERO;
    }
    timeval(usage.ru_utime) + timeval(usage.ru_stime)
}

/// Peak resident set size of this process, in bytes: `VmHWM` of /proc/self/status,
/// else `getrusage`. Not `getrusage` first: Linux carries its `ru_maxrss` across
/// `execve`, so a process started by `cargo run` (which execs it) reported cargo's own
/// peak (92 MiB for `make demo`, whose own peak was 62 MiB).
pub fn peak_rss_bytes() -> u64 {
    if let Some(kib) = status_kib("VmHWM:") {
        return kib * 1024;
    }
    // SAFETY: as above.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return 0;
    }
    // Linux reports ru_maxrss in KiB.
    (usage.ru_maxrss.max(0) as u64) * 1024
}

/// A `kB` field of /proc/self/status (`None` where /proc is not available).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}

/// CPU time (user + system) another process has used, from `/proc/PID/stat`.
/// `None` where /proc is not available or the process is gone.
pub fn child_cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; fields after the last ')' are fixed.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = if ticks > 0 { ticks as u64 } else { 100 };
    Some(Duration::from_secs_f64((utime + stime) as f64 / ticks as f64))
}

/// CPU time the whole machine has been busy (user, nice, system, irq, softirq, steal;
/// all cores), from the first line of `/proc/stat`. `None` where it is not available.
pub fn machine_busy_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let f: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal
    let busy = [0, 1, 2, 5, 6, 7].iter().filter_map(|&i| f.get(i)).sum::<u64>();
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ticks = if ticks > 0 { ticks as u64 } else { 100 };
    Some(Duration::from_secs_f64(busy as f64 / ticks as f64))
}

/// vCPUs this process may run on.
pub fn vcpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Total memory of the machine, in bytes, from /proc/meminfo.
pub fn memory_total_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work() {
        let before = process_cpu_time();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        assert!(process_cpu_time() > before);
    }

    #[test]
    fn own_stat_parses() {
        let cpu = child_cpu_time(std::process::id()).expect("/proc/self/stat readable on Linux");
        assert!(cpu <= process_cpu_time() + Duration::from_millis(50));
        assert!(peak_rss_bytes() > 1 << 20);
        // The peak is this process's own, at least what it holds now.
        let now = status_kib("VmRSS:").expect("VmRSS in /proc/self/status") * 1024;
        assert!(peak_rss_bytes() >= now, "{} < {now}", peak_rss_bytes());
        assert!(vcpus() >= 1);
        assert!(memory_total_bytes().unwrap() > 1 << 20);
    }
}
