//! The generated messages (package `api`), server traits and clients, written by build.rs from
//! `proto/submit.proto` with `--features grpc-codegen` and checked in (`generated/`:
//! scripts/gen-grpc.sh writes them again).
//!
//! Owns: nothing written by hand. Must not: hold code of its own (conversion is
//! [`super::convert`], the server's codec [`super::codec`]); it is a leaf the rest of
//! `armada_api` imports.

include!("generated/server_api.rs");
include!("generated/client_api.rs");
