//! The order configurations run in: `ascending` (bucket, then workers, then
//! repetition, back to back) or `interleaved` (repetitions as rounds; within a round,
//! each bucket's worker counts in a shuffle seeded by the request's seed and the
//! round), so drift over the run (warm-up, a burst allowance, a noisy neighbour) is
//! spread over the worker counts instead of landing on the same ones every time.
//! Each configuration runs once per client of the request (`clients`), the clients
//! of one worker count back to back ([`with_clients`]), so drift lands on both alike;
//! in an interleaved order the client that goes first changes from round to round.

use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::model::{Client, Order};
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
    /// The S3 client of this run of the configuration.
    pub client: Client,
}

/// The seed of round `round`'s shuffle.
fn round_seed(seed: u64, round: u32) -> u64 {
    seed.rotate_left(17) ^ 0x5eed_0f0d_e6ed_u64 ^ u64::from(round).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Every configuration of `plan` in the order to run it.
pub(crate) fn steps(plan: &Plan) -> Vec<Step> {
    let steps = steps_of(
        plan.order(),
        plan.buckets().len(),
        plan.workers(),
        plan.repetitions(),
        plan.seed(),
    );
    with_clients(steps, plan.clients())
}

/// Each step once per client, the clients of a step back to back; in round `r` of an
/// interleaved order the client list is rotated by `r - 1`, so each client goes first
/// in some rounds.
pub(crate) fn with_clients(steps: Vec<Step>, clients: &[Client]) -> Vec<Step> {
    let mut out = Vec::with_capacity(steps.len() * clients.len());
    for step in steps {
        let turn = step.round.map_or(0, |r| r.saturating_sub(1) as usize);
        for i in 0..clients.len() {
            let client = clients[(i + turn) % clients.len()];
            out.push(Step { client, ..step });
        }
    }
    out
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
                            client: Client::Sdk,
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
                        client: Client::Sdk,
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

    #[test]
    fn each_step_runs_once_per_client_back_to_back() {
        let both = [Client::Sdk, Client::Lean];
        let asc = with_clients(steps_of(Order::Ascending, 1, &[1, 8], 1, 1), &both);
        let got: Vec<(u32, Client)> = asc.iter().map(|s| (s.workers, s.client)).collect();
        assert_eq!(
            got,
            [(1, Client::Sdk), (1, Client::Lean), (8, Client::Sdk), (8, Client::Lean)]
        );
        let inter = with_clients(steps_of(Order::Interleaved, 1, &W, 4, 7), &both);
        assert_eq!(inter.len(), W.len() * 4 * 2);
        for pair in inter.chunks(2) {
            assert_eq!((pair[0].workers, pair[0].round), (pair[1].workers, pair[1].round));
            assert_ne!(pair[0].client, pair[1].client);
        }
        let first_of = |round: u32| inter.iter().find(|s| s.round == Some(round)).unwrap().client;
        assert_ne!(first_of(1), first_of(2), "the first client changes from round to round");
        let one = with_clients(steps_of(Order::Ascending, 2, &W, 2, 1), &[Client::Sdk]);
        assert_eq!(
            one,
            steps_of(Order::Ascending, 2, &W, 2, 1),
            "one client: today's order"
        );
    }
}
