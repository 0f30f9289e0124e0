//! Counting and presence tables (Count-Min sketch, Bloom filter), HyperLogLog, file formats.
