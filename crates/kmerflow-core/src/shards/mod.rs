//! Tables sharded over processes: the second backend of the engine's tables, between the
//! in-process tables of [`crate::table`] and the operations of [`crate::ops`].
//!
//! - [`khmer`]: khmer's layout cut into shards, contiguous ranges of its counters: the shard
//!   map (`ShardMap`: counter indices split by shard with one counting sort), a shard's kernel
//!   (`Shard`: add, look up, step) and the client's part (`ShardClient`: bigcounts, statistics);
//! - [`blocked`]: the blocked layout cut into shards of whole cache lines, with its counting
//!   ([`blocked::count`]) and normalization ([`blocked::normalize`]) runs;
//! - [`runs`]: whole files through a sharded table (reading, hashing and routing batches,
//!   counting, normalize-by-median, look-ups), the transport to the remote shards
//!   (`RemoteShards`) and the driver of the native commands' decisions (`ShardedDecisions`);
//! - [`in_flight`]: the updates a remote shard's answer lacks while they travel;
//! - [`mod@file`]: a saved table written and read shard by shard at the shards' places.
//!
//! Every result is that of the one-process table with the same sizes.

pub mod blocked;
pub mod file;
pub mod in_flight;
pub mod khmer;
pub mod runs;
