//! The parallel, order-preserving batch engine: reader -> workers -> ordered writer.
