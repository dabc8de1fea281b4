//! The lab's network interface: what the server sends to its clients leaves as frames
//! from one queue shared by every connection, at an aggregate rate, with an optional
//! burst at a higher rate (one-time, or refilling while the link is idle, as EC2's
//! burst credits do), and optionally a per-connection cap, the way a Firecracker
//! microVM's network device rate-limits a Lambda function.
//!
//! [`NicStream`] wraps each accepted socket: its writes (headers and bodies, as a NIC
//! sees them; over TLS, the encrypted bytes) go out one frame at a time ([`frame_bytes`]:
//! about 1.5 to 16 KiB, by the rate). A frame takes its place at the end of the shared
//! queue and is written when the link has sent it (the end of its slot), so the next
//! frame of the same connection queues behind the frames every other connection put
//! there meanwhile: concurrent bodies interleave, a body takes the time its share of
//! the link allows, and a response's first byte waits only behind what is queued ahead
//! of it. Reads (the requests) are not shaped. The queue is kept as virtual time:
//! `next_free` is when the link has sent every frame queued so far; a frame of `n`
//! bytes starts there and moves it by `n / rate`. A link idle for a while may run
//! ahead by [`SLACK`] only (a few frames), so a writer woken a little late by the
//! timer does not lose the link's time, yet an idle link gives no burst the
//! configuration did not ask for. The burst is spent first, at its own rate; with a
//! refill rate, the time the link spends idle (nothing queued) gives credit back at
//! that rate, up to the burst's size (without one it never refills). [`NicTally`]
//! counts the bytes shaped, the bytes sent in the burst, the frames, and the time
//! writers waited.
//!
//! Cost: one lock, one timer and one wake-up per frame: at 40 MiB/s in 16 KiB frames,
//! about 2,600 a second (docs/network.md has the measured CPU).

use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// The smallest frame: an Ethernet frame's payload.
pub const MIN_FRAME_BYTES: usize = 1_500;

/// The largest frame: a TLS record, and small enough that 32 connections at 40 MiB/s
/// take turns every 13 ms.
pub const MAX_FRAME_BYTES: usize = 16 * 1024;

/// A frame holds about this much of the link's time (bounded by the sizes above):
/// small frames at low rates, so connections interleave finely; 16 KiB from 33 MiB/s,
/// so the frames (each a lock, a timer and a wake-up) stay few.
const FRAME_TIME: Duration = Duration::from_micros(500);

/// The frame size at `rate_mib_s`.
pub fn frame_bytes(rate_mib_s: f64) -> usize {
    let bytes = rate_mib_s * MIB * FRAME_TIME.as_secs_f64();
    (bytes as usize).clamp(MIN_FRAME_BYTES, MAX_FRAME_BYTES)
}

/// How far a link may run ahead after being idle: the queue's credit in time. Covers
/// the timer's 1 ms granularity and a writer woken a little late; while connections
/// keep frames queued, a late writer loses nothing anyway (the others' frames keep
/// the link busy), so this only decides what an idle link gives: at 40 MiB/s, 200 KiB
/// (with 50 ms it gave 2 MiB at the start of every row, and a 256-object row of 46 KB
/// ran at 45 MiB/s on a 40 MiB/s link).
pub const SLACK: Duration = Duration::from_millis(5);

/// The per-connection cap's depth: shorter, so a client that moves between pooled
/// connections gets little credit from the one left idle.
pub const CAP_SLACK: Duration = Duration::from_millis(10);

/// A burst: the first `size_mib` MiB go at `rate_mib_s`, then the sustained rate;
/// while the link is idle the credit refills at `refill_mib_s`, up to `size_mib`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Burst {
    /// Bytes of the burst, in MiB.
    pub size_mib: f64,
    /// Rate during the burst, MiB/s.
    pub rate_mib_s: f64,
    /// Burst credit regained per second of idle link (nothing being sent), MiB/s;
    /// 0 (the default): a one-time burst that never refills.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refill_mib_s: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// How the NIC shapes what the server sends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NicConfig {
    /// Sustained rate over all connections, MiB/s.
    pub rate_mib_s: f64,
    /// A one-time burst before the sustained rate (`None`: no burst).
    pub burst: Option<Burst>,
    /// Most one connection may send, MiB/s (`None`: only the aggregate binds).
    pub per_connection_mib_s: Option<f64>,
}

/// A NIC setting the lab refuses, with the value given.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum NicProblem {
    #[error("rate must be a positive number of MiB/s, got {0}")]
    Rate(f64),
    #[error("burst size must be 0 or more MiB, got {0}")]
    BurstSize(f64),
    #[error("burst rate must be a positive number of MiB/s, got {0}")]
    BurstRate(f64),
    #[error("burst refill must be 0 or more MiB/s, got {0}")]
    BurstRefill(f64),
    #[error("per-connection cap must be a positive number of MiB/s, got {0}")]
    PerConnection(f64),
}

/// Every setting of a [`NicConfig`] the lab refuses.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", crate::each_named(&.0))]
pub struct NicError(pub Vec<NicProblem>);

impl NicConfig {
    /// Checks the rates and sizes, naming every bad one.
    pub fn check(&self) -> Result<(), NicError> {
        let positive = |v: f64| v.is_finite() && v > 0.0;
        let at_least_0 = |v: f64| v.is_finite() && v >= 0.0;
        let mut bad = Vec::new();
        if !positive(self.rate_mib_s) {
            bad.push(NicProblem::Rate(self.rate_mib_s));
        }
        if let Some(b) = self.burst {
            if !at_least_0(b.size_mib) {
                bad.push(NicProblem::BurstSize(b.size_mib));
            }
            if !positive(b.rate_mib_s) {
                bad.push(NicProblem::BurstRate(b.rate_mib_s));
            }
            if !at_least_0(b.refill_mib_s) {
                bad.push(NicProblem::BurstRefill(b.refill_mib_s));
            }
        }
        if let Some(c) = self.per_connection_mib_s.filter(|c| !positive(*c)) {
            bad.push(NicProblem::PerConnection(c));
        }
        match bad.is_empty() {
            true => Ok(()),
            false => Err(NicError(bad)),
        }
    }

    /// `40 MiB/s, burst 64 MiB at 320 MiB/s, 10 MiB/s per connection` in words.
    pub fn describe(&self) -> String {
        let mut s = format!("{:.2} MiB/s over all connections", self.rate_mib_s);
        if let Some(b) = self.burst {
            if b.refill_mib_s > 0.0 {
                s.push_str(&format!(
                    ", a burst of {:.1} MiB at {:.2} MiB/s first, refilled at {:.2} MiB/s while idle",
                    b.size_mib, b.rate_mib_s, b.refill_mib_s
                ));
            } else {
                s.push_str(&format!(
                    ", a one-time burst of {:.1} MiB at {:.2} MiB/s first",
                    b.size_mib, b.rate_mib_s
                ));
            }
        }
        if let Some(c) = self.per_connection_mib_s {
            s.push_str(&format!(", at most {c:.2} MiB/s per connection"));
        }
        s
    }
}

/// What the NIC has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct NicTally {
    /// Bytes written through the NIC (all connections).
    pub bytes_shaped: u64,
    /// Of those, bytes reserved at the burst's rate.
    pub burst_bytes: u64,
    /// Burst bytes not yet spent.
    pub burst_left_bytes: u64,
    /// Time writers spent waiting for the link or their cap, summed over
    /// connections, in ms.
    pub throttled_ms: f64,
    /// Writes that had to wait.
    pub throttled_writes: u64,
    /// Frames sent (each a write of at most the frame size).
    #[serde(default)]
    pub frames: u64,
}

/// The shared link: virtual time and the burst left.
#[derive(Debug)]
struct Link {
    next_free: Instant,
    burst_left_bytes: u64,
    /// Idle time before this has given its burst credit back already.
    refilled_to: Instant,
}

/// The lab's NIC, shared by every connection.
#[derive(Debug)]
pub struct Nic {
    config: NicConfig,
    /// The frame size at the fastest rate (the burst's, when it has one: at 5 MiB/s
    /// after a burst at 20, 2.6 KB frames were 8,000 wake-ups a second during the
    /// burst, more than a loaded machine kept up with).
    frame_bytes: usize,
    link: Mutex<Link>,
    bytes_shaped: AtomicU64,
    burst_bytes: AtomicU64,
    throttled_ns: AtomicU64,
    throttled_writes: AtomicU64,
    frames: AtomicU64,
}

/// A frame's slot on the link: it starts when the link has sent what was queued
/// before it and is due (written) when the link has sent it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    start: Instant,
    due: Instant,
}

impl Nic {
    /// A NIC with `config` (checked by the caller), its burst unspent.
    pub fn new(config: NicConfig) -> Self {
        let burst_left_bytes = config.burst.map_or(0, |b| (b.size_mib * MIB) as u64);
        let now = Instant::now();
        Nic {
            frame_bytes: frame_bytes(
                config
                    .burst
                    .map_or(config.rate_mib_s, |b| b.rate_mib_s.max(config.rate_mib_s)),
            ),
            config,
            link: Mutex::new(Link {
                next_free: now,
                burst_left_bytes,
                refilled_to: now,
            }),
            bytes_shaped: AtomicU64::new(0),
            burst_bytes: AtomicU64::new(0),
            throttled_ns: AtomicU64::new(0),
            throttled_writes: AtomicU64::new(0),
            frames: AtomicU64::new(0),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &NicConfig {
        &self.config
    }

    /// The tally so far.
    pub fn tally(&self) -> NicTally {
        let burst_left_bytes = self.link.lock().map_or(0, |l| l.burst_left_bytes);
        NicTally {
            bytes_shaped: self.bytes_shaped.load(Ordering::Relaxed),
            burst_bytes: self.burst_bytes.load(Ordering::Relaxed),
            burst_left_bytes,
            throttled_ms: self.throttled_ns.load(Ordering::Relaxed) as f64 / 1e6,
            throttled_writes: self.throttled_writes.load(Ordering::Relaxed),
            frames: self.frames.load(Ordering::Relaxed),
        }
    }

    /// Queues a frame of `n` bytes on the link at `now`: its slot.
    fn reserve(&self, n: usize, now: Instant) -> Slot {
        let mut link = self.link.lock().unwrap_or_else(|e| e.into_inner());
        self.refill(&mut link, now);
        let floor = now.checked_sub(SLACK).unwrap_or(now);
        if link.next_free < floor {
            link.next_free = floor;
        }
        let start = link.next_free;
        let mut n = n as u64;
        let mut cost_s = 0.0;
        if let Some(burst) = self.config.burst.filter(|_| link.burst_left_bytes > 0) {
            let in_burst = n.min(link.burst_left_bytes);
            link.burst_left_bytes -= in_burst;
            n -= in_burst;
            cost_s += in_burst as f64 / (burst.rate_mib_s * MIB);
            self.burst_bytes.fetch_add(in_burst, Ordering::Relaxed);
        }
        cost_s += n as f64 / (self.config.rate_mib_s * MIB);
        link.next_free += Duration::from_secs_f64(cost_s);
        Slot {
            start,
            due: link.next_free,
        }
    }

    /// Gives back burst credit for the time the link was idle before `now` (since it
    /// last sent, and not given back before), at the burst's refill rate.
    fn refill(&self, link: &mut Link, now: Instant) {
        let Some(burst) = self.config.burst.filter(|b| b.refill_mib_s > 0.0) else {
            return;
        };
        let idle_from = link.next_free.max(link.refilled_to);
        if idle_from < now {
            let credit = (now - idle_from).as_secs_f64() * burst.refill_mib_s * MIB;
            let size = (burst.size_mib * MIB) as u64;
            link.burst_left_bytes = (link.burst_left_bytes + credit as u64).min(size);
        }
        link.refilled_to = link.refilled_to.max(now);
    }

    fn count_wait(&self, waited: Duration) {
        self.throttled_ns.fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
        self.throttled_writes.fetch_add(1, Ordering::Relaxed);
    }
}

/// One connection's cap: its own virtual time.
#[derive(Debug)]
struct Cap {
    rate_bytes_s: f64,
    next_free: Instant,
}

/// Where a write is in its reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing reserved: the next write checks the cap, then reserves on the link.
    Idle,
    /// Waiting for the connection's cap.
    Capped,
    /// Waiting for the link to send a frame of `bytes`.
    Link { bytes: usize },
    /// A frame of `bytes` is due: it may be written.
    Ready { bytes: usize },
}

/// An accepted socket whose writes go through the NIC (or straight through, without one).
pub struct NicStream<S> {
    inner: S,
    nic: Option<Arc<Nic>>,
    cap: Option<Cap>,
    phase: Phase,
    sleep: Pin<Box<Sleep>>,
    wait_started: Instant,
}

impl<S> NicStream<S> {
    /// Wraps `inner`; with `nic: None` writes pass straight through.
    pub fn new(inner: S, nic: Option<Arc<Nic>>) -> Self {
        let now = Instant::now();
        let cap = nic.as_ref().and_then(|n| n.config.per_connection_mib_s).map(|c| Cap {
            rate_bytes_s: c * MIB,
            next_free: now,
        });
        NicStream {
            inner,
            nic,
            cap,
            phase: Phase::Idle,
            sleep: Box::pin(tokio::time::sleep_until(now)),
            wait_started: now,
        }
    }

    /// The wrapped socket.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Moves the reservation on until `want` bytes (at most) may be written; returns
    /// how many, or `Pending` while it waits.
    fn poll_grant(&mut self, cx: &mut Context<'_>, nic: &Nic, want: usize) -> Poll<usize> {
        loop {
            match self.phase {
                Phase::Ready { bytes } => return Poll::Ready(bytes),
                Phase::Capped | Phase::Link { .. } => {
                    if self.sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    nic.count_wait(Instant::now().saturating_duration_since(self.wait_started));
                    self.phase = match self.phase {
                        Phase::Link { bytes } => Phase::Ready { bytes },
                        _ => Phase::Idle,
                    };
                }
                Phase::Idle => {
                    let now = Instant::now();
                    if let Some(ready) = self.cap.as_ref().map(|c| c.next_free).filter(|t| *t > now) {
                        self.wait(now, ready, Phase::Capped);
                        continue;
                    }
                    self.reserve(nic, want);
                }
            }
        }
    }

    /// Queues a frame of `want` bytes (at most the NIC's frame size) on the link and on
    /// the cap; it is written when the link has sent it.
    fn reserve(&mut self, nic: &Nic, want: usize) {
        let bytes = want.clamp(1, nic.frame_bytes);
        let now = Instant::now();
        let slot = nic.reserve(bytes, now);
        nic.frames.fetch_add(1, Ordering::Relaxed);
        if let Some(cap) = self.cap.as_mut() {
            let from = cap
                .next_free
                .max(slot.start)
                .max(now.checked_sub(CAP_SLACK).unwrap_or(now));
            cap.next_free = from + Duration::from_secs_f64(bytes as f64 / cap.rate_bytes_s);
        }
        if slot.due > now {
            self.wait(now, slot.due, Phase::Link { bytes });
        } else {
            self.phase = Phase::Ready { bytes };
        }
    }

    fn wait(&mut self, now: Instant, until: Instant, phase: Phase) {
        self.wait_started = now;
        self.sleep.as_mut().reset(until);
        self.phase = phase;
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for NicStream<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for NicStream<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        let Some(nic) = this.nic.clone() else {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        };
        if buf.is_empty() {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        }
        let granted = match this.poll_grant(cx, &nic, buf.len()) {
            Poll::Ready(n) => n,
            Poll::Pending => return Poll::Pending,
        };
        let n = granted.min(buf.len());
        let written = match Pin::new(&mut this.inner).poll_write(cx, &buf[..n]) {
            Poll::Ready(Ok(w)) => w,
            other => return other,
        };
        let left = granted - written;
        this.phase = if left == 0 {
            Phase::Idle
        } else {
            Phase::Ready { bytes: left }
        };
        nic.bytes_shaped.fetch_add(written as u64, Ordering::Relaxed);
        Poll::Ready(Ok(written))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        if self.nic.is_none() {
            return Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        }
        // Shaped: one slice at a time (is_write_vectored says so for shaped streams).
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &**b);
        self.poll_write(cx, first)
    }

    fn is_write_vectored(&self) -> bool {
        self.nic.is_none() && self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(rate: f64) -> NicConfig {
        NicConfig {
            rate_mib_s: rate,
            burst: None,
            per_connection_mib_s: None,
        }
    }

    #[test]
    fn bad_rates_are_all_named() {
        let bad = NicConfig {
            rate_mib_s: 0.0,
            burst: Some(Burst {
                size_mib: -1.0,
                rate_mib_s: f64::NAN,
                refill_mib_s: -1.0,
            }),
            per_connection_mib_s: Some(-2.0),
        };
        let e = bad.check().unwrap_err();
        assert_eq!(e.0.len(), 5, "{e}");
        assert!(
            matches!(e.0[..], [NicProblem::Rate(r), NicProblem::BurstSize(_), NicProblem::BurstRate(_), NicProblem::BurstRefill(_), NicProblem::PerConnection(c)] if r == 0.0 && c == -2.0)
        );
        for part in [
            "rate must",
            "burst size",
            "burst rate",
            "burst refill",
            "per-connection cap",
        ] {
            assert!(e.to_string().contains(part), "{e}");
        }
        assert!(config(40.0).check().is_ok());
    }

    #[test]
    fn reservations_follow_the_rate_and_the_burst_first() {
        // 1 MiB/s sustained, a burst of 1 MiB at 4 MiB/s.
        let nic = Nic::new(NicConfig {
            burst: Some(Burst {
                size_mib: 1.0,
                rate_mib_s: 4.0,
                refill_mib_s: 0.0,
            }),
            ..config(1.0)
        });
        let t0 = Instant::now();
        // 64 x 16 KiB = 1 MiB of burst: the link is then busy 0.25 s.
        let kib16 = 16 * 1024;
        let first = nic.reserve(kib16, t0).start;
        for _ in 1..64 {
            nic.reserve(kib16, t0);
        }
        let after_burst = nic.reserve(kib16, t0);
        let busy = (after_burst.start - first).as_secs_f64();
        assert!((busy - 0.25).abs() < 1e-6, "{busy}");
        // The next 16 KiB at 1 MiB/s: due 1/64 s after it starts, when the link has sent it.
        let step = (after_burst.due - after_burst.start).as_secs_f64();
        assert!((step - 1.0 / 64.0).abs() < 1e-6, "{step}");
        assert_eq!(
            nic.reserve(kib16, t0).start,
            after_burst.due,
            "the next frame queues behind it"
        );
        assert_eq!(nic.tally().burst_bytes, 1 << 20);
        assert_eq!(nic.tally().burst_left_bytes, 0);
    }

    #[test]
    fn an_idle_link_refills_its_burst_at_the_refill_rate_up_to_its_size() {
        // 1 MiB/s sustained; a burst of 1 MiB at 4 MiB/s refilled at 2 MiB/s.
        let burst = |refill_mib_s: f64| {
            Nic::new(NicConfig {
                burst: Some(Burst {
                    size_mib: 1.0,
                    rate_mib_s: 4.0,
                    refill_mib_s,
                }),
                ..config(1.0)
            })
        };
        let (nic, never) = (burst(2.0), burst(0.0));
        // Idle since it was made: the link runs ahead by the slack only, so 1 MiB
        // reserved at t0 keeps it busy from t0 - 5 ms to t0 + 245 ms.
        let t0 = Instant::now() + Duration::from_secs(1);
        for n in [&nic, &never] {
            n.reserve(1 << 20, t0);
            assert_eq!(n.tally().burst_left_bytes, 0);
        }
        // Busy until then: nothing back. Idle 0.25 s after it: half a MiB back.
        let ms = |n: u64| t0 + Duration::from_millis(n);
        nic.reserve(0, ms(245));
        assert_eq!(nic.tally().burst_left_bytes, 0);
        nic.reserve(0, ms(495));
        assert_eq!(nic.tally().burst_left_bytes, 1 << 19);
        // The same idle time is not given back twice; a long idle stops at the size.
        nic.reserve(0, ms(495));
        assert_eq!(nic.tally().burst_left_bytes, 1 << 19);
        nic.reserve(0, t0 + Duration::from_secs(10));
        assert_eq!(nic.tally().burst_left_bytes, 1 << 20);
        never.reserve(0, t0 + Duration::from_secs(10));
        assert_eq!(never.tally().burst_left_bytes, 0);
    }

    #[test]
    fn an_idle_link_runs_ahead_by_the_slack_only() {
        let nic = Nic::new(config(1.0));
        let now = Instant::now() + Duration::from_secs(5);
        let slot = nic.reserve(MIN_FRAME_BYTES, now);
        assert_eq!(now - slot.start, SLACK);
    }

    #[test]
    fn frames_are_a_half_millisecond_of_the_link_within_1500_b_and_16_kib() {
        assert_eq!(frame_bytes(0.5), MIN_FRAME_BYTES);
        assert_eq!(frame_bytes(10.0), 5_242);
        assert_eq!(frame_bytes(40.0), MAX_FRAME_BYTES);
        assert_eq!(frame_bytes(1_000.0), MAX_FRAME_BYTES);
        assert_eq!(Nic::new(config(40.0)).frame_bytes, 16 * 1024);
    }
}
