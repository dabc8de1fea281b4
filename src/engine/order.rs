//! The order configurations run in: `ascending` (bucket, then workers, then
//! repetition, back to back) or `interleaved` (repetitions as rounds; within a round,
//! each bucket's worker counts in a shuffle seeded by the request's seed and the
//! round), so drift over the run (warm-up, a burst allowance, a noisy neighbour) is
//! spread over the worker counts instead of landing on the same ones every time.

use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::model::Order;
use crate::plan::Plan;

/// One configuration in the order run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Step {
    /// Index into the plan's buckets.
    pub bucket: usize,
    pub workers: u32,
    pub repetition: u32,
    /// The round of an interleaved order (= `repetition`).
    pub round: Option<u32>,
}

/// The seed of round `round`'s shuffle.
fn round_seed(seed: u64, round: u32) -> u64 {
    seed.rotate_left(17) ^ 0x5eed_0f0d_e6ed_u64 ^ u64::from(round).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Every configuration of `plan` in the order to run it.
pub(crate) fn steps(plan: &Plan) -> Vec<Step> {
    steps_of(
        plan.order(),
        plan.buckets().len(),
        plan.workers(),
        plan.repetitions(),
        plan.seed(),
    )
}

/// [`steps`] from its parts.
pub(crate) fn steps_of(order: Order, buckets: usize, workers: &[u32], repetitions: u32, seed: u64) -> Vec<Step> {
    let mut out = Vec::new();
    match order {
        Order::Ascending => {
            for bucket in 0..buckets {
                for &w in workers {
                    for repetition in 1..=repetitions {
                        out.push(Step {
                            bucket,
                            workers: w,
                            repetition,
                            round: None,
                        });
                    }
                }
            }
        }
        Order::Interleaved => {
            for round in 1..=repetitions {
                let mut rng = rand::rngs::StdRng::seed_from_u64(round_seed(seed, round));
                for bucket in 0..buckets {
                    let mut shuffled = workers.to_vec();
                    shuffled.shuffle(&mut rng);
                    out.extend(shuffled.into_iter().map(|w| Step {
                        bucket,
                        workers: w,
                        repetition: round,
                        round: Some(round),
                    }));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
