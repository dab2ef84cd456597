//! Job slots shared by several drainers: at most so many points run at once across all of
//! them, handed out first come, first served.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::exec::Stop;

/// How often a drainer waiting for a slot looks at its stop request.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// A fair counting semaphore of job slots, shared (in an `Arc`) by the drainers of many queues
/// ([`Drainer::slots`](super::Drainer::slots)): a point takes a slot as it starts and gives it
/// back as it ends. Slots go to the waiters in the order they asked, so a worker that just
/// gave one back and asks again queues behind every worker already waiting, and one busy queue
/// cannot starve the others.
#[derive(Debug)]
pub struct Slots {
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Debug)]
struct State {
    free: usize,
    next_ticket: u64,
    /// The tickets of the waiters, in the order they asked.
    waiting: VecDeque<u64>,
}

impl Slots {
    /// `n` slots (at least one).
    pub fn new(n: usize) -> Self {
        Self {
            state: Mutex::new(State {
                free: n.max(1),
                next_ticket: 0,
                waiting: VecDeque::new(),
            }),
            freed: Condvar::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a slot, behind every earlier waiter, and holds it until the guard is dropped;
    /// `None` when a stop was requested first.
    pub fn take<'s>(&'s self, stop: &Stop) -> Option<Slot<'s>> {
        let mut state = self.state();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push_back(ticket);
        loop {
            if state.free > 0 && state.waiting.front() == Some(&ticket) {
                state.waiting.pop_front();
                state.free -= 1;
                // The next waiter may find a slot free too.
                self.freed.notify_all();
                return Some(Slot { slots: self });
            }
            if stop.graceful() {
                state.waiting.retain(|t| *t != ticket);
                // Whoever was behind this ticket may be first now.
                self.freed.notify_all();
                return None;
            }
            state = self
                .freed
                .wait_timeout(state, STOP_CHECK)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Slots free now.
    pub fn free(&self) -> usize {
        self.state().free
    }
}

/// A slot held, given back when dropped.
#[derive(Debug)]
pub struct Slot<'s> {
    slots: &'s Slots,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.slots.state().free += 1;
        self.slots.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, mpsc};

    use super::*;

    #[test]
    fn slots_bound_what_is_held() {
        let slots = Slots::new(2);
        let stop = Stop::new();
        let a = slots.take(&stop).unwrap();
        let _b = slots.take(&stop).unwrap();
        assert_eq!(slots.free(), 0);
        drop(a);
        assert_eq!(slots.free(), 1);
    }

    #[test]
    fn a_stop_ends_a_wait() {
        let slots = Slots::new(1);
        let held = Stop::new();
        let _a = slots.take(&held).unwrap();
        let stop = Stop::new();
        stop.request();
        assert!(slots.take(&stop).is_none());
        assert_eq!(slots.state().waiting.len(), 0);
    }

    #[test]
    fn waiters_are_served_in_the_order_they_asked() {
        let slots = Arc::new(Slots::new(1));
        let stop = Arc::new(Stop::new());
        let first = slots.take(&stop).unwrap();
        let (tx, rx) = mpsc::channel();
        let mut handles = Vec::new();
        for i in 0..4u64 {
            // Each waiter is queued before the next one starts asking.
            let (mine, stop, tx) = (Arc::clone(&slots), Arc::clone(&stop), tx.clone());
            handles.push(std::thread::spawn(move || {
                let slot = mine.take(&stop).unwrap();
                tx.send(i).unwrap();
                drop(slot);
            }));
            while slots.state().waiting.len() as u64 != i + 1 {
                std::thread::yield_now();
            }
        }
        drop(first);
        for h in handles {
            h.join().unwrap();
        }
        let order: Vec<u64> = rx.try_iter().collect();
        assert_eq!(order, [0, 1, 2, 3]);
    }
}
