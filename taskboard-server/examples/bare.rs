//! The benchmark baseline: a bare hyper 1.x hello-world on the same
//! runtime and connection settings as taskboard-server, so `bench/run.sh`
//! can show what the server costs on top of hyper itself.
//!
//! `cargo run --release -p taskboard-server --example bare -- 127.0.0.1:8091`

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8091".to_string());
    let listener = TcpListener::bind(&addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new()).keep_alive(true);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let http = http.clone();
        tokio::spawn(async move {
            let service = service_fn(|_req: Request<hyper::body::Incoming>| async {
                let mut res = Response::new(Full::new(Bytes::from_static(b"{\"status\":\"ok\"}")));
                res.headers_mut()
                    .insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
                Ok::<_, Infallible>(res)
            });
            let _ = http.serve_connection(TokioIo::new(stream), service).await;
        });
    }
}
