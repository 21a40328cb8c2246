//! The floor under the WebSocket fan-out (`bench/ws.sh fanout`): what one
//! message to each of N loopback TCP connections costs this machine with
//! no WebSocket, no runtime and no board, only one `write` and one `read`
//! per connection.
//!
//! Two processes, as in the benchmark: this one accepts N connections and
//! writes a frame of `--bytes` to each of them, from one thread per core;
//! a child (this program again, `--read`) connects N times and reads the
//! frames in order, from one thread. Each frame carries the wall-clock time its round
//! started; the child reports, per round, when its last connection had
//! the frame. `bench/ws.sh` prints the fan-out's latency as a ratio to
//! this one.
#![forbid(unsafe_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser;

#[derive(Debug, Parser)]
struct Args {
    #[arg(long, default_value_t = 1000)]
    clients: usize,
    #[arg(long, default_value_t = 30)]
    rounds: usize,
    /// Size of each frame (the benchmark passes the size of its
    /// `task.updated` frames).
    #[arg(long, default_value_t = 700)]
    bytes: usize,
    /// Runs as the reading side, connecting to this address.
    #[arg(long, hide = true)]
    read: Option<SocketAddr>,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn main() -> Result<(), Error> {
    let args = Args::parse();
    let bytes = args.bytes.max(8);
    match args.read {
        Some(addr) => read_side(addr, args.clients, args.rounds, bytes),
        None => write_side(args.clients, args.rounds, bytes),
    }
}

fn write_side(clients: usize, rounds: usize, bytes: usize) -> Result<(), Error> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let mut reader = Command::new(std::env::current_exe()?)
        .args(["--read", &addr.to_string(), "--clients", &clients.to_string()])
        .args(["--rounds", &rounds.to_string(), "--bytes", &bytes.to_string()])
        .stdout(Stdio::piped())
        .spawn()?;
    let mut sockets = Vec::with_capacity(clients);
    for _ in 0..clients {
        let (socket, _) = listener.accept()?;
        socket.set_nodelay(true)?;
        sockets.push(socket);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_thread = clients.div_ceil(threads).max(1);
    let mut frame = vec![b'x'; bytes];
    for _ in 0..rounds {
        // The child is connected when every connection was accepted;
        // rounds are spaced as the fan-out spaces its updates.
        std::thread::sleep(Duration::from_millis(100));
        frame[..8].copy_from_slice(&now_ns().to_le_bytes());
        std::thread::scope(|scope| {
            for chunk in sockets.chunks_mut(per_thread) {
                let frame = &frame;
                scope.spawn(move || {
                    for socket in chunk {
                        socket.write_all(frame).expect("writing a frame");
                    }
                });
            }
        });
    }
    let mut report = String::new();
    reader.stdout.take().ok_or("no pipe from the reader")?.read_to_string(&mut report)?;
    if !reader.wait()?.success() {
        return Err("the reading side failed".into());
    }
    print!("{report}");
    Ok(())
}

fn read_side(addr: SocketAddr, clients: usize, rounds: usize, bytes: usize) -> Result<(), Error> {
    let mut sockets = Vec::with_capacity(clients);
    for _ in 0..clients {
        sockets.push(TcpStream::connect(addr)?);
    }
    // One reading thread: a second one (tried) made the floor no lower.
    let mut frame = vec![0u8; bytes];
    let mut latencies = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let mut started = 0;
        for socket in &mut sockets {
            socket.read_exact(&mut frame)?;
            started = u64::from_le_bytes(frame[..8].try_into()?);
        }
        latencies.push(Duration::from_nanos(now_ns().saturating_sub(started)));
    }
    latencies.sort();
    let at = |p: f64| latencies[((p / 100.0 * rounds as f64).ceil() as usize).clamp(1, rounds) - 1];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "floor: {clients} loopback TCP connections x {rounds} frames of {bytes} bytes, one write and one \
         read each, to the last connection: p50 {:.2} ms, p99 {:.2} ms",
        ms(at(50.0)),
        ms(at(99.0)),
    );
    Ok(())
}
