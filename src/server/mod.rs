//! `retryctl serve`: a local Armada-compatible REST server over SQLite. (Placeholder.)
