//! The stack's floor for the `serve` benchmark (docs/reference/bars.md: a GET at least 80% of an
//! axum hello-world on the same pinned core): the same axum + tokio as `retryctl serve`,
//! one route answering a fixed body, no middleware, no log.
//!
//!     cargo build --release --example hello_axum
//!     taskset -c 0 target/release/examples/hello_axum    # prints its URL on stderr
//!
//! Runs until killed.

use axum::routing::get;

fn main() -> std::io::Result<()> {
    // The same runtime as `retryctl serve`: multi-threaded, one worker per core it may use.
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        eprintln!("hello_axum: listening on http://{}", listener.local_addr()?);
        let app = axum::Router::new().route("/", get(|| async { "hello" }));
        axum::serve(listener, app).await
    })
}
