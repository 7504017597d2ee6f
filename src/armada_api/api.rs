//! The generated messages (package `api`), server traits and clients, written by build.rs into
//! OUT_DIR from `proto/submit.proto`.
//!
//! Owns: nothing written by hand. Must not: hold code of its own (conversion is
//! [`super::convert`], the server's codec [`super::codec`]); it is a leaf the rest of
//! `armada_api` imports.

include!(concat!(env!("OUT_DIR"), "/server/api.rs"));
include!(concat!(env!("OUT_DIR"), "/client/api.rs"));
