//! A remote shard's message as bytes, the form in which the transport carries it (one byte
//! array a message, read on the shard's side without a copy of its own): its [`Kind`], the
//! updates to apply and the keys, little-endian. An array of `u64` whose values span less than
//! 2^32 (a shard's counters always do, unless the shard holds 4 G counters) is written as 32-bit
//! offsets from its smallest value, halving what travels; any other (k-mer hashes) as 64-bit
//! values.
//!
//! Layout: the kind (`0` step, `1` add), the updates' counters (an array), their deltas (a
//! `u64` length, then the bytes), the keys (an array); an array is its `u64` length, its width
//! (`4` or `8`), for width 4 the `u64` base, then the values.

use super::khmer::Updates;
use super::runs::{Kind, Message};
use crate::{Error, Result};

/// The bytes of a message besides its values: the kind, each array's length, width and base,
/// the deltas' length. A message of 32-bit arrays fits the capacity reserved for it exactly, so
/// that it is never moved while written (a copy of the whole message, into fresh pages).
const HEADERS: usize = 1 + 2 * (8 + 1 + 8) + 8;

/// The bytes of a message of `kind`: the updates `apply`, then `keys` (a batch's keys read
/// through the shard's positions, or a decoded message's keys), written straight into the
/// message with no copy of their own.
pub fn encode(kind: Kind, apply: &Updates, keys: impl ExactSizeIterator<Item = u64> + Clone) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADERS + 4 * (apply.counters.len() + keys.len()) + apply.deltas.len());
    out.push(match kind {
        Kind::Step => 0,
        Kind::Add => 1,
    });
    put_u64s(&mut out, apply.counters.iter().copied());
    out.extend_from_slice(&(apply.deltas.len() as u64).to_le_bytes());
    out.extend_from_slice(&apply.deltas);
    put_u64s(&mut out, keys);
    out
}

/// The message that `bytes` hold, and its kind; an error for bytes that [`encode`] did not
/// write (cut short, lengths that disagree, an unknown kind or width, bytes left over).
pub fn decode(bytes: &[u8]) -> Result<(Kind, Message)> {
    let mut reader = Reader(bytes);
    let kind = match reader.take(1)? {
        [0] => Kind::Step,
        [1] => Kind::Add,
        [k] => return Err(malformed(format!("unknown kind {k}"))),
        _ => unreachable!("one byte taken"),
    };
    let counters = reader.u64s()?;
    let n_deltas = reader.u64()?;
    let deltas = reader.items(n_deltas, 1)?.to_vec();
    if deltas.len() != counters.len() {
        return Err(malformed(format!("{} counters to update but {} deltas", counters.len(), deltas.len())));
    }
    let keys = reader.u64s()?;
    if !reader.0.is_empty() {
        return Err(malformed(format!("{} bytes after its end", reader.0.len())));
    }
    Ok((kind, Message { apply: Updates { counters, deltas }, keys }))
}

/// Appends `values` as an array (see the module's layout).
fn put_u64s(out: &mut Vec<u8>, values: impl ExactSizeIterator<Item = u64> + Clone) {
    let (low, high) = values.clone().fold((u64::MAX, 0), |(low, high), v| (low.min(v), high.max(v)));
    let n = values.len();
    out.extend_from_slice(&(n as u64).to_le_bytes());
    let start = out.len();
    if n == 0 || high - low <= u64::from(u32::MAX) {
        let base = low.min(high);
        out.push(4);
        out.extend_from_slice(&base.to_le_bytes());
        let start = out.len();
        out.resize(start + 4 * n, 0);
        for (to, v) in out[start..].chunks_exact_mut(4).zip(values) {
            to.copy_from_slice(&((v - base) as u32).to_le_bytes());
        }
    } else {
        out.push(8);
        out.resize(start + 1 + 8 * n, 0);
        for (to, v) in out[start + 1..].chunks_exact_mut(8).zip(values) {
            to.copy_from_slice(&v.to_le_bytes());
        }
    }
}

/// The error of a message that is not one.
fn malformed(why: String) -> Error {
    Error::invalid(format!("a shard message is malformed: {why}"))
}

/// The bytes of a message not read yet.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.0.len() {
            return Err(malformed(format!("it ends {} bytes early", n - self.0.len())));
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(taken)
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes taken")))
    }

    /// The bytes of the next `n` items of `width` bytes.
    fn items(&mut self, n: u64, width: usize) -> Result<&'a [u8]> {
        match usize::try_from(n).ok().and_then(|n| n.checked_mul(width)) {
            Some(bytes) => self.take(bytes),
            None => Err(malformed(format!("{n} values of {width} bytes"))),
        }
    }

    /// An array of `u64` (see the module's layout). An offset is added to its base modulo
    /// 2^64: only a message that [`encode`] did not write can overflow, and its keys are then
    /// the shard's to refuse, as any other keys out of its range.
    fn u64s(&mut self) -> Result<Vec<u64>> {
        let n = self.u64()?;
        let width = self.take(1)?[0];
        let base = match width {
            4 => self.u64()?,
            8 => 0,
            w => return Err(malformed(format!("unknown width {w}"))),
        };
        let bytes = self.items(n, usize::from(width))?;
        Ok(if width == 8 {
            bytes.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).collect()
        } else {
            bytes
                .chunks_exact(4)
                .map(|b| base.wrapping_add(u64::from(u32::from_le_bytes(b.try_into().expect("4 bytes")))))
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(counters: Vec<u64>, deltas: Vec<u8>, keys: Vec<u64>) -> Message {
        Message { apply: Updates { counters, deltas }, keys }
    }

    /// The bytes of `m` of `kind`.
    fn bytes(kind: Kind, m: &Message) -> Vec<u8> {
        encode(kind, &m.apply, m.keys.iter().copied())
    }

    fn round_trip(kind: Kind, m: &Message) -> (Kind, Message) {
        decode(&bytes(kind, m)).unwrap()
    }

    fn same(a: &Message, b: &Message) -> bool {
        a.apply.counters == b.apply.counters && a.apply.deltas == b.apply.deltas && a.keys == b.keys
    }

    #[test]
    fn messages_round_trip_in_either_width() {
        let start = 7u64 << 33; // a shard far into the counter space: offsets still fit 32 bits
        let step = message(vec![start + 5, start + 1], vec![3, 1], vec![start + 9, start, start + u64::from(u32::MAX)]);
        let add = message(vec![], vec![], vec![0, u64::MAX, 1 << 40]); // hashes: 64-bit values
        let empty = message(vec![], vec![], vec![]);
        for (kind, m) in [(Kind::Step, &step), (Kind::Add, &add), (Kind::Step, &empty)] {
            let (decoded_kind, decoded) = round_trip(kind, m);
            assert_eq!(decoded_kind, kind);
            assert!(same(&decoded, m), "{m:?} came back as {decoded:?}");
        }
    }

    #[test]
    fn narrow_arrays_take_half_the_bytes() {
        let keys: Vec<u64> = (0..1000).map(|i| (1 << 35) + 3 * i).collect();
        let narrow = bytes(Kind::Step, &message(vec![], vec![], keys.clone()));
        let wide = bytes(Kind::Step, &message(vec![], vec![], vec![0, u64::MAX]));
        assert!(narrow.len() < 4 * keys.len() + 64, "{} bytes", narrow.len());
        // kind, empty counters (length, width, base), no deltas, keys (length, width, 2 values)
        assert_eq!(wide.len(), 1 + 17 + 8 + 9 + 16);
    }

    #[test]
    fn a_narrow_message_is_written_in_the_capacity_reserved() {
        let at = 1 << 35;
        let m = message(vec![at + 4, at + 1], vec![2, 1], (0..1000).map(|i| at + 3 * i).collect());
        let encoded = bytes(Kind::Step, &m);
        assert_eq!((encoded.len(), encoded.capacity()), (HEADERS + 4 * 1002 + 2, HEADERS + 4 * 1002 + 2));
    }

    #[test]
    fn malformed_messages_are_errors() {
        let good = bytes(Kind::Step, &message(vec![10, 20], vec![1, 2], vec![10, 30]));
        let mut unknown_kind = good.clone();
        unknown_kind[0] = 9;
        let mut unknown_width = good.clone();
        unknown_width[9] = 5;
        let mut huge_length = good.clone();
        huge_length[1..9].copy_from_slice(&u64::MAX.to_le_bytes());
        let fewer_deltas = bytes(Kind::Step, &message(vec![10, 20], vec![1], vec![]));
        let long = [good.as_slice(), &[0]].concat();
        for bytes in
            [&[][..], &good[..good.len() - 1], &unknown_kind, &unknown_width, &huge_length, &fewer_deltas, &long]
        {
            let error = decode(bytes).unwrap_err().to_string();
            assert!(error.contains("a shard message is malformed"), "{error}");
        }
    }
}
