//! The order configurations run in: `ascending` (bucket, then object size, then
//! workers, then repetition, back to back) or `interleaved` (repetitions as rounds;
//! within a round, each bucket's object size x worker count pairs in a shuffle seeded
//! by the request's seed and the round), so drift over the run (warm-up, a burst allowance, a noisy neighbour) is
//! spread over the worker counts instead of landing on the same ones every time.
//! Each configuration runs once per point on the other axes (`clients`, `hedge`), the
//! points of one worker count back to back ([`with_axes`]), so drift lands on all
//! alike and a hedged row and its unhedged pair ran side by side in the same round;
//! in an interleaved order the client and policy that go first change from round to round.

use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::model::{Axes, AxisValues, Order};
use crate::plan::Plan;

/// One configuration in the order run: its bucket, workers, repetition and its point
/// on the axes. Everything keyed by a configuration (the run, its row, its progress
/// line, the request log) takes it from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Step {
    /// Index into the plan's buckets.
    pub bucket: usize,
    pub workers: u32,
    pub repetition: u32,
    /// The round of an interleaved order (= `repetition`).
    pub round: Option<u32>,
    /// The configuration's point on the axes (object size, client, hedge policy).
    pub axes: Axes,
}

/// The seed of round `round`'s shuffle.
fn round_seed(seed: u64, round: u32) -> u64 {
    seed.rotate_left(17) ^ 0x5eed_0f0d_e6ed_u64 ^ u64::from(round).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Every configuration of `plan` in the order to run it.
pub(crate) fn steps(plan: &Plan) -> Vec<Step> {
    let values = plan.axis_values();
    let steps = sized_steps_of(
        plan.order(),
        plan.buckets().len(),
        (&values.object_size_bytes, plan.workers()),
        plan.repetitions(),
        plan.seed(),
    );
    with_axes(steps, &values)
}

/// Each step once per point of `values` on the axes the order does not shuffle with
/// the workers (client, hedge policy), back to back; in round `r` of an interleaved
/// order each axis's values are rotated by `r - 1`, so each client and policy goes
/// first in some rounds and drift lands on all alike.
pub(crate) fn with_axes(steps: Vec<Step>, values: &AxisValues) -> Vec<Step> {
    let mut out = Vec::with_capacity(steps.len() * values.count() as usize);
    for step in steps {
        let turn = step.round.map_or(0, |r| r.saturating_sub(1) as usize);
        out.extend(
            values
                .at(step.axes)
                .points(turn)
                .into_iter()
                .map(|axes| Step { axes, ..step }),
        );
    }
    out
}

/// [`steps`] from its parts, without a size axis.
#[cfg(test)]
pub(crate) fn steps_of(order: Order, buckets: usize, workers: &[u32], repetitions: u32, seed: u64) -> Vec<Step> {
    sized_steps_of(order, buckets, (&[None], workers), repetitions, seed)
}

/// [`steps`] from its parts: `sizes` x `workers` per bucket (`sizes` is `[None]`
/// without a size axis, and the order is then the same as before the axis).
pub(crate) fn sized_steps_of(
    order: Order,
    buckets: usize,
    (sizes, workers): (&[Option<u64>], &[u32]),
    repetitions: u32,
    seed: u64,
) -> Vec<Step> {
    let pairs: Vec<(Option<u64>, u32)> = sizes
        .iter()
        .flat_map(|&s| workers.iter().map(move |&w| (s, w)))
        .collect();
    let step = |bucket, (size, workers): (Option<u64>, u32), repetition, round| Step {
        bucket,
        workers,
        repetition,
        round,
        axes: Axes {
            object_size_bytes: size,
            ..Axes::default()
        },
    };
    let mut out = Vec::new();
    match order {
        Order::Ascending => {
            for bucket in 0..buckets {
                for &pair in &pairs {
                    out.extend((1..=repetitions).map(|r| step(bucket, pair, r, None)));
                }
            }
        }
        Order::Interleaved => {
            for round in 1..=repetitions {
                let mut rng = rand::rngs::StdRng::seed_from_u64(round_seed(seed, round));
                for bucket in 0..buckets {
                    let mut shuffled = pairs.clone();
                    shuffled.shuffle(&mut rng);
                    out.extend(shuffled.into_iter().map(|p| step(bucket, p, round, Some(round))));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Client, Hedge};

    const W: [u32; 6] = [1, 2, 4, 8, 16, 32];

    #[test]
    fn ascending_is_todays_order() {
        let s = steps_of(Order::Ascending, 1, &[1, 8], 2, 1);
        let got: Vec<(u32, u32)> = s.iter().map(|s| (s.workers, s.repetition)).collect();
        assert_eq!(got, [(1, 1), (1, 2), (8, 1), (8, 2)]);
    }

    #[test]
    fn interleaved_runs_rounds_of_every_worker_count_reproducibly() {
        let a = steps_of(Order::Interleaved, 2, &W, 4, 7);
        assert_eq!(a, steps_of(Order::Interleaved, 2, &W, 4, 7), "same seed, same order");
        assert_ne!(
            a,
            steps_of(Order::Interleaved, 2, &W, 4, 8),
            "another seed, another order"
        );
        assert_eq!(a.len(), 2 * W.len() * 4);
        for (round, chunk) in a.chunks(W.len()).enumerate() {
            let mut ws: Vec<u32> = chunk.iter().map(|s| s.workers).collect();
            ws.sort_unstable();
            assert_eq!(ws, W, "each bucket's round holds every worker count once");
            let r = round as u32 / 2 + 1;
            assert!(chunk.iter().all(|s| s.round == Some(r) && s.repetition == r));
        }
        let firsts: std::collections::BTreeSet<u32> = a.chunks(2 * W.len()).map(|c| c[0].workers).collect();
        assert!(
            firsts.len() > 1,
            "the first worker count changes from round to round: {firsts:?}"
        );
    }

    #[test]
    fn sizes_are_swept_with_the_workers() {
        let sizes = [Some(4096), Some(1 << 20)];
        let a = sized_steps_of(Order::Ascending, 1, (&sizes, &[1, 8]), 1, 1);
        let got: Vec<(Option<u64>, u32)> = a.iter().map(|s| (s.axes.object_size_bytes, s.workers)).collect();
        assert_eq!(got, [(sizes[0], 1), (sizes[0], 8), (sizes[1], 1), (sizes[1], 8)]);
        let i = sized_steps_of(Order::Interleaved, 2, (&sizes, &W), 3, 5);
        assert_eq!(i.len(), 2 * 2 * W.len() * 3);
        for chunk in i.chunks(2 * W.len()) {
            let mut pairs: Vec<(Option<u64>, u32)> =
                chunk.iter().map(|s| (s.axes.object_size_bytes, s.workers)).collect();
            pairs.sort_unstable();
            let mut want: Vec<(Option<u64>, u32)> =
                sizes.iter().flat_map(|&s| W.iter().map(move |&w| (s, w))).collect();
            want.sort_unstable();
            assert_eq!(pairs, want, "each bucket's round holds every size x workers once");
        }
        let sizes_first: std::collections::BTreeSet<Option<u64>> =
            i.chunks(W.len()).map(|c| c[0].axes.object_size_bytes).collect();
        assert_eq!(
            sizes_first.len(),
            2,
            "sizes are interleaved, not run one after the other"
        );
        // Without an axis the order is the one before it.
        assert_eq!(
            sized_steps_of(Order::Interleaved, 2, (&[None], &W), 4, 7),
            steps_of(Order::Interleaved, 2, &W, 4, 7)
        );
    }

    #[test]
    fn each_step_runs_once_per_hedge_policy_side_by_side() {
        let policies = [Hedge::Off, Hedge::Percentile(95), Hedge::AfterMs(40)];
        let inter = with_axes(
            steps_of(Order::Interleaved, 1, &W, 3, 7),
            &AxisValues::new(&[], &[], &[], &policies),
        );
        assert_eq!(inter.len(), W.len() * 3 * 3);
        for triple in inter.chunks(3) {
            assert!(triple
                .iter()
                .all(|s| (s.workers, s.round) == (triple[0].workers, triple[0].round)));
            let mut got: Vec<Hedge> = triple.iter().map(|s| s.axes.hedge).collect();
            got.sort_by_key(|h| h.to_string());
            assert_eq!(got, [Hedge::AfterMs(40), Hedge::Off, Hedge::Percentile(95)]);
        }
        let first_of = |round: u32| inter.iter().find(|s| s.round == Some(round)).unwrap().axes.hedge;
        assert_ne!(first_of(1), first_of(2), "the first policy changes from round to round");
    }

    fn clients(clients: &[Client]) -> AxisValues {
        AxisValues::new(&[], &[], clients, &[])
    }

    #[test]
    fn each_step_runs_once_per_client_back_to_back() {
        let both = [Client::Sdk, Client::Lean];
        let asc = with_axes(steps_of(Order::Ascending, 1, &[1, 8], 1, 1), &clients(&both));
        let got: Vec<(u32, Client)> = asc.iter().map(|s| (s.workers, s.axes.s3_client)).collect();
        assert_eq!(
            got,
            [(1, Client::Sdk), (1, Client::Lean), (8, Client::Sdk), (8, Client::Lean)]
        );
        let inter = with_axes(steps_of(Order::Interleaved, 1, &W, 4, 7), &clients(&both));
        assert_eq!(inter.len(), W.len() * 4 * 2);
        for pair in inter.chunks(2) {
            assert_eq!((pair[0].workers, pair[0].round), (pair[1].workers, pair[1].round));
            assert_ne!(pair[0].axes.s3_client, pair[1].axes.s3_client);
        }
        let first_of = |round: u32| inter.iter().find(|s| s.round == Some(round)).unwrap().axes.s3_client;
        assert_ne!(first_of(1), first_of(2), "the first client changes from round to round");
        let one = with_axes(steps_of(Order::Ascending, 2, &W, 2, 1), &clients(&[Client::Sdk]));
        assert_eq!(
            one,
            steps_of(Order::Ascending, 2, &W, 2, 1),
            "one client: today's order"
        );
    }
}
