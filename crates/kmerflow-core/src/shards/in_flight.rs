//! The batches of a sharded normalization sent to the remote shards and not decided yet, for
//! both layouts ([`super::runs::ShardedKeep`]).
//!
//! The next batch is sent before the one answered is decided, so that its round trip overlaps
//! the decisions: at most two batches wait. The answers of the second then lack the remote
//! updates of the batch decided meanwhile (they reach the shards with a later message), which
//! are added to its values through the batch's own map from counters to their first positions
//! (one look-up per update). The updates were computed from the exact values, so each
//! sum is at most the counters' maximum: the corrected values are those the read-by-read run
//! reads.

use std::collections::VecDeque;

/// The batches sent and not decided (at most two), oldest first, each with whether it was sent
/// before the one ahead of it was decided.
pub struct InFlight<B> {
    waiting: VecDeque<(B, bool)>,
}

impl<B> Default for InFlight<B> {
    fn default() -> Self {
        InFlight { waiting: VecDeque::new() }
    }
}

impl<B> InFlight<B> {
    /// Whether two batches wait (no other may be sent before one is decided).
    pub fn full(&self) -> bool {
        self.waiting.len() >= 2
    }

    /// Adds a batch just sent.
    pub fn push(&mut self, batch: B) {
        let overtook = !self.waiting.is_empty();
        self.waiting.push_back((batch, overtook));
    }

    /// The oldest batch sent, the next to be decided.
    pub fn front_mut(&mut self) -> Option<&mut B> {
        self.waiting.front_mut().map(|(b, _)| b)
    }

    /// Takes the oldest batch sent, to decide it.
    pub fn pop(&mut self) -> Option<B> {
        self.waiting.pop_front().map(|(b, _)| b)
    }

    /// The batch waiting when it was sent before the batch taken last was decided: its
    /// answers lack that batch's remote updates.
    pub fn overtaken(&mut self) -> Option<&mut B> {
        match self.waiting.front_mut() {
            Some((next, true)) => Some(next),
            _ => None,
        }
    }
}
