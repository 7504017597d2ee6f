//! An in-process `retryctl serve` for tests: in-memory SQLite, 127.0.0.1 on a free port, its
//! own tokio runtime on its own thread, shut down gracefully on drop.
//!
//! Other test files run the `retryctl` binary against `TestServer::start().url`.

use std::sync::mpsc;
use std::thread::JoinHandle;

use retryctl::server::{Config, Location, Server};

pub struct TestServer {
    /// `http://127.0.0.1:PORT` (`https://` with TLS), no trailing slash.
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Anonymous access.
    pub fn start() -> TestServer {
        Self::start_with_auth(&[], &[])
    }

    /// Requires one of the `user:pass` pairs (basic auth) or one of the bearer tokens.
    pub fn start_with_auth(basic: &[&str], tokens: &[&str]) -> TestServer {
        let mut config = Config::new("127.0.0.1:0", Location::InMemory);
        config.basic_auth = basic.iter().map(|s| s.to_string()).collect();
        config.tokens = tokens.iter().map(|s| s.to_string()).collect();
        Self::start_config(config)
    }

    /// Any configuration (a database file, say).
    pub fn start_config(config: Config) -> TestServer {
        let (ready_tx, ready_rx) = mpsc::channel::<Result<String, String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("test-server".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                rt.block_on(async move {
                    let server = match Server::bind(config).await {
                        Ok(s) => s,
                        Err(e) => {
                            let _ = ready_tx.send(Err(format!("{e:#}")));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(server.url()));
                    server
                        .run(async {
                            let _ = stop_rx.await;
                        })
                        .await
                        .expect("server runs and shuts down cleanly");
                });
            })
            .expect("spawn server thread");
        let url = ready_rx
            .recv()
            .expect("server thread reports")
            .unwrap_or_else(|e| panic!("test server did not start: {e}"));
        TestServer {
            url,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            // Don't turn a failing test's panic into an abort by panicking again.
            if t.join().is_err() && !std::thread::panicking() {
                panic!("test server thread panicked");
            }
        }
    }
}
