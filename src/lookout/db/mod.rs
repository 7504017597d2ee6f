//! Lookout's PostgreSQL database (`--lookout-db`) as a stream of jobs.
//!
//! Owns: connecting (errors → exit 4 with the DSN masked, or 5 for wrong credentials), the
//! check that the Lookout tables exist, and the values sent to the server (literals, job ids
//! as keys). In rooms of its own: the columns read and their order ([`columns`]), the one
//! statement that reads them and the queries beside it ([`statement`](mod@statement): a
//! binary `COPY` of `job LEFT JOIN job_run` ordered by `job_id`, so a job's rows arrive
//! together and the client holds one job at a time whatever the table size; the days of a
//! queue's jobs nearest a window that holds none, [`nearest`]), the COPY stream read row by
//! row and grouped into jobs ([`stream`]), and each row's values decoded by hand, a row that
//! cannot be read an `Item::Bad` naming the job, the run and the column ([`decode`],
//! docs/lookout.md); `watch`'s reads by page are in [`terminal`](super::terminal). Must not:
//! map rows to histories (`mapping`), or print.
//!
//! A `SQL_ASCII` database keeps whatever bytes it was given: its text is read as those bytes
//! (the session's `client_encoding` is `SQL_ASCII` too, else the server refuses to send a row
//! that is not UTF-8 and the whole statement fails), a row whose text is not UTF-8 is an
//! `Item::Bad` like any row that cannot be read (left out, the rows after it read), its id
//! named with those bytes as `\xNN` (`shown_bytes`), and a job id that is not UTF-8 is kept
//! as a key that gives its bytes back exactly ([`key_of`], [`RawText`]), so that `watch`'s
//! pages go on past it and the polls that read it again skip it.
//!
//! Why one binary `COPY` rather than pages of queries: the server sends the rows as one
//! stream in its own binary format (timestamps as integers: no text to format on one side
//! and parse on the other, and `infinity` is a value like any other, not an error that ends
//! the statement), the client decodes each field in place without a row object, and reading
//! overlaps with the server's work. Paging by key re-plans and re-descends the indexes for
//! every page, and on a queue that is a small part of the table scans the rest again and
//! again. `COPY` takes no parameters, so the filter's values are written into the statement
//! as escaped literals ([`literal`]).
//!
//! Hostile values cost bounded work: `error` (and `debug`, stored the same way) is read at most [`ERROR_BYTES_MAX`] bytes
//! (`substring` on the server, which fetches only those bytes of a TOASTed value) and
//! inflated at most `ERROR_TEXT_MAX` bytes (a zlib bomb stays a few KiB of work), the
//! annotations at most [`ANNOTATIONS_MAX`] characters, and a job's runs at most
//! [`JOB_BYTES_MAX`] bytes held.
//!
//! Why `tokio-postgres` behind a private current-thread runtime, as the sync `postgres` crate
//! does it: the CLI is synchronous, but `postgres`' COPY reader borrows its client, so a
//! source that owns both could not be an iterator; `tokio-postgres`' COPY stream owns its
//! channel. The runtime only runs while `DbJobs` waits for data, so nothing is read ahead
//! of the consumer beyond the socket's buffers: memory stays flat. TLS is not offered
//! (`NoTls`): a DSN with `sslmode=require` is refused by the connection with that reason.

mod columns;
mod connect;
mod decode;
mod statement;
mod stream;

pub(super) use columns::COLUMNS;
pub use columns::{ANNOTATIONS_MAX, ERROR_BYTES_MAX};
pub use connect::{check_dsn, connect, connect_with, key_of, literal, Db, HISTORY_TABLES};
pub(super) use connect::{key_bytes, key_literal, query_error, RawText};
pub use statement::{nearest, shard_ranks, statement, Nearest};
pub(super) use stream::{by_key, copy_jobs};
pub use stream::{jobs, jobs_on, JOB_BYTES_MAX};
