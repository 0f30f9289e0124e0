//! k-mer hashing (khmer's 2-bit and MurmurHash3 hashes, bit-exact) and read cleaning.
//!
//! - [`twobit`]: khmer's 2-bit encoding (A=0, T=1, C=2, G=3), canonical = min(forward,
//!   reverse complement), rolling iteration (docs/khmer-compat.md §1.1).
//! - [`murmur`]: MurmurHash3_x64_128 and khmer's canonical Murmur hash (§1.2).
//! - [`clean`]: the three cleaning rules of khmer (§1.4).

pub mod clean;
pub mod murmur;
pub mod twobit;

use crate::{Error, Result};

/// Which strand a k-mer hash stands for.
///
/// khmer hashes canonical k-mers: a k-mer and its reverse complement are one molecule of
/// double-stranded DNA and share a hash. Stranded data (stranded RNA-seq, single-stranded
/// DNA) keeps them apart: each k-mer is hashed as read. Tables record which one they hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strand {
    /// min(forward, reverse complement): khmer's hash, the default.
    #[default]
    Canonical,
    /// The k-mer as read, never its reverse complement (`--single-strand`).
    Single,
}

impl Strand {
    /// `Single` when `single_strand`, else `Canonical`.
    pub fn from_single(single_strand: bool) -> Self {
        if single_strand {
            Self::Single
        } else {
            Self::Canonical
        }
    }

    /// Whether k-mers are hashed as read.
    pub fn is_single(self) -> bool {
        self == Self::Single
    }

    /// Words for messages: "single-strand" or "canonical".
    pub fn describe(self) -> &'static str {
        match self {
            Self::Canonical => "canonical",
            Self::Single => "single-strand",
        }
    }

    /// Refuses the table file `path`, whose k-mers are hashed `found`, where k-mers hashed
    /// `self` are wanted: counts of one kind looked up with hashes of the other are wrong.
    pub fn check_table(self, found: Strand, path: &str) -> Result<()> {
        if found == self {
            return Ok(());
        }
        Err(Error::format(
            path,
            None,
            None,
            format!(
                "holds {} k-mers, not the {} k-mers asked for (--single-strand must match the table's)",
                found.describe(),
                self.describe()
            ),
        ))
    }
}
