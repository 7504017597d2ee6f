//! The embedded evaluator: pure, deterministic retry decisions. (Placeholder.)
