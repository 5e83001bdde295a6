//! The few system calls live mode needs, wrapped: TUN devices opened inside a network
//! namespace, `ppoll` with a nanosecond timeout, timer slack and real-time priority.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `TUNSETIFF` (linux/if_tun.h): `_IOW('T', 202, int)`.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
/// A layer-3 device (no Ethernet header).
const IFF_TUN: libc::c_short = 0x0001;
/// No packet-information prefix on reads and writes.
const IFF_NO_PI: libc::c_short = 0x1000;

fn last_err(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Runs `f` with the calling thread inside the network namespace `/run/netns/<ns>`,
/// and moves the thread back to its own namespace afterwards.
pub fn in_netns<T>(ns: &str, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let own = File::open("/proc/thread-self/ns/net")?;
    let target = File::open(format!("/run/netns/{ns}"))
        .map_err(|e| io::Error::new(e.kind(), format!("namespace {ns}: {e}")))?;
    // SAFETY: plain system calls on open descriptors.
    if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(last_err("setns into the host namespace"));
    }
    let out = f();
    // SAFETY: as above; failing to return would leave the thread in the wrong place.
    if unsafe { libc::setns(own.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(last_err("setns back"));
    }
    out
}

/// Creates TUN device `name` (IPv4 packets, no prefix) in the calling thread's
/// namespace and returns its descriptor, non-blocking.
pub fn open_tun(name: &str) -> io::Result<OwnedFd> {
    let path = CString::new("/dev/net/tun").expect("no NUL");
    // SAFETY: open with a valid C string.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(last_err("open /dev/net/tun"));
    }
    // SAFETY: fd is a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.bytes().take(15)) {
        *d = s as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = IFF_TUN | IFF_NO_PI;
    // SAFETY: TUNSETIFF reads an ifreq.
    if unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req) } < 0 {
        return Err(last_err("TUNSETIFF"));
    }
    Ok(fd)
}

/// Reads one packet into `buf`; `Ok(None)` when none is waiting.
#[inline]
pub fn read_packet(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(n as usize))
}

/// Writes one packet; false if the device refused it (counted by the caller).
#[inline]
pub fn write_packet(fd: RawFd, b: &[u8]) -> bool {
    // SAFETY: b is valid for b.len() bytes.
    unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) == b.len() as isize }
}

/// Waits until one of `fds` is readable or `timeout_ns` passed (`None`: no limit);
/// true if a descriptor became readable (or a signal came) before the timeout.
pub fn poll_in(fds: &mut [libc::pollfd], timeout_ns: Option<u64>) -> bool {
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let tp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
    for f in fds.iter_mut() {
        f.revents = 0;
    }
    // SAFETY: fds and ts outlive the call; a null sigmask keeps the current one.
    let n = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tp,
            std::ptr::null(),
        )
    };
    n != 0
}

/// The CPU time one short sleep costs the calling thread [ns]: the mean over `n` sleeps
/// of 10 µs in `ppoll` (arming the timer, its interrupt, switching away and back).
/// On the 2-vCPU development VM it is 13–20 µs, more than the waits between packets at
/// 1 Gb/s; on bare metal a few µs.
pub fn sleep_cost_ns(n: u32) -> u64 {
    let n = n.max(1);
    let c0 = thread_cpu_ns();
    for _ in 0..n {
        poll_in(&mut [], Some(10_000));
    }
    thread_cpu_ns().saturating_sub(c0) / n as u64
}

/// Sets the calling thread's timer slack to 1 ns (docs/live.md: 100 µs sleeps overshoot by
/// 54 µs with the default 50 µs slack, 3.8 µs with 1 ns).
pub fn set_timer_slack_1ns() -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(last_err("PR_SET_TIMERSLACK"));
    }
    Ok(())
}

/// Gives the calling thread SCHED_FIFO priority `prio`; an error if not permitted.
pub fn set_fifo(prio: i32) -> io::Result<()> {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: sched_setscheduler on the calling thread (0) with a valid param.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
        return Err(last_err("SCHED_FIFO"));
    }
    Ok(())
}

/// The CPUs the calling thread may run on (`sched_getaffinity`); `None` if unknown.
pub fn affinity() -> Option<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: sched_getaffinity writes one cpu_set_t of the given size.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return None;
    }
    // SAFETY: CPU_ISSET reads the set for an index below CPU_SETSIZE.
    Some(
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect(),
    )
}

/// Lets the calling thread run only on `cpus` (`sched_setaffinity`).
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: as in `affinity`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: CPU_SET writes the set; indices at or past CPU_SETSIZE are skipped.
        if c < libc::CPU_SETSIZE as usize {
            unsafe { libc::CPU_SET(c, &mut set) };
        }
    }
    // SAFETY: sched_setaffinity reads one cpu_set_t of the given size.
    if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) } != 0 {
        return Err(last_err("sched_setaffinity"));
    }
    Ok(())
}

/// The CPU the calling thread is running on (`sched_getcpu`); `None` if unknown.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: no arguments.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).ok()
}

/// True if a process with `pid` exists.
pub fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Sends `sig` to process `pid`.
pub fn kill(pid: i32, sig: i32) {
    // SAFETY: plain kill.
    unsafe { libc::kill(pid, sig) };
}

/// CPU time the calling thread has used [ns] (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// (busy, all) jiffies of every core together since boot, from `/proc/stat`'s `cpu`
/// line (busy: all but idle and iowait); `None` if unreadable.
pub fn machine_jiffies() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().next()?.strip_prefix("cpu ")?;
    let v: Vec<u64> = line
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let all: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some((all - idle, all))
}

/// The 1-minute load average, from `/proc/loadavg` (NaN if unreadable).
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: no arguments.
    unsafe { libc::geteuid() }
}
