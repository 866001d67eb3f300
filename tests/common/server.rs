//! An HTTP server on 127.0.0.1 (tiny_http) serving files with byte ranges, and the ways a
//! server can misbehave, chosen by the first segment of the path:
//!
//! - `/f/NAME`: ranges as RFC 9110 says (206 with Content-Range; 416 past the end);
//! - `/norange/NAME`: 200 and the whole file, whatever the Range;
//! - `/nolength/NAME`: 200, the whole file, chunked (no Content-Length);
//! - `/r416/NAME`: 416 for every range;
//! - `/short/NAME`: 206 whose Content-Length (and body) is half the range its Content-Range gives;
//! - `/long/NAME`: 206 with the range asked in Content-Range and 1000 bytes more in the body;
//! - `/wrongstart/NAME`: 206 for a range starting one byte later than asked;
//! - `/lielength/NAME`: Content-Length 1000 bytes more than the body sent (the range asked for
//!   is all there);
//! - `/e500/NAME`: 500 for the first two requests of the path, then as `/f/`;
//! - `/e404/NAME`, `/e401/NAME`: that status;
//! - `/stall/NAME`: no answer for 30 seconds;
//! - `/redirect/NAME`: 302 to `/f/NAME` on `localhost` (another host than 127.0.0.1);
//! - `/redirect-same/NAME`: 302 to `/f/NAME` on 127.0.0.1.
//!
//! Every request is logged (path, host, range, authorization, body bytes sent).
//! [`Server::cutting_proxy`] puts a TCP proxy in front that cuts its first connections after a
//! number of bytes: a connection dropped mid-answer.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tiny_http::{Header, Response, StatusCode};

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Logged {
    pub path: String,
    pub host: String,
    pub range: Option<String>,
    pub authorization: Option<String>,
    pub sent: u64,
}

#[derive(Default)]
struct State {
    files: HashMap<String, Arc<Vec<u8>>>,
    log: Vec<Logged>,
    hits: HashMap<String, u32>,
}

pub struct Server {
    pub port: u16,
    state: Arc<Mutex<State>>,
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).unwrap()
}

/// `bytes=a-b` (or `a-`) against a file of `len` bytes: the inclusive range, if satisfiable.
fn parse_range(value: &str, len: u64) -> Option<(u64, u64)> {
    let (a, b) = value.strip_prefix("bytes=")?.split_once('-')?;
    let a: u64 = a.parse().ok()?;
    let b: u64 = if b.is_empty() {
        len.checked_sub(1)?
    } else {
        b.parse().ok()?
    };
    (a < len && a <= b).then(|| (a, b.min(len - 1)))
}

impl Server {
    pub fn start() -> Server {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let port = server.server_addr().to_ip().unwrap().port();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        std::thread::spawn(move || {
            for request in server.incoming_requests() {
                let state = shared.clone();
                std::thread::spawn(move || handle(request, &state, port));
            }
        });
        Server { port, state }
    }

    pub fn add(&self, name: &str, bytes: Vec<u8>) {
        let mut state = self.state.lock().unwrap();
        state.files.insert(name.to_owned(), Arc::new(bytes));
    }

    pub fn url(&self, mode: &str, name: &str) -> String {
        format!("http://127.0.0.1:{}/{mode}/{name}", self.port)
    }

    pub fn log(&self) -> Vec<Logged> {
        self.state.lock().unwrap().log.clone()
    }

    pub fn clear_log(&self) {
        self.state.lock().unwrap().log.clear();
    }

    /// Requests and body bytes sent for paths containing `name` since the log was cleared.
    pub fn cost(&self, name: &str) -> (usize, u64) {
        let log = self.log();
        let mine: Vec<_> = log.iter().filter(|l| l.path.contains(name)).collect();
        (mine.len(), mine.iter().map(|l| l.sent).sum())
    }

    /// A proxy on another port whose first `cut` connections are closed after `after` bytes
    /// of the answer; it returns the proxy's port.
    pub fn cutting_proxy(&self, cut: u32, after: usize) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let target = self.port;
        let count = Arc::new(AtomicU32::new(0));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let n = count.fetch_add(1, Ordering::SeqCst);
                let limit = if n < cut { after } else { usize::MAX };
                std::thread::spawn(move || proxy(client, target, limit));
            }
        });
        port
    }
}

fn proxy(client: TcpStream, target: u16, limit: usize) {
    let Ok(upstream) = TcpStream::connect(("127.0.0.1", target)) else {
        return;
    };
    let (mut c_read, mut u_write) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut c_read, &mut u_write);
        let _ = u_write.shutdown(std::net::Shutdown::Write);
    });
    let (mut u_read, mut c_write) = (upstream, client);
    let mut sent = 0usize;
    let mut buf = [0u8; 8192];
    loop {
        let n = match u_read.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let n = n.min(limit - sent);
        if c_write.write_all(&buf[..n]).is_err() {
            break;
        }
        sent += n;
        if sent >= limit {
            break;
        }
    }
    let _ = c_write.shutdown(std::net::Shutdown::Both);
    let _ = u_read.shutdown(std::net::Shutdown::Both);
}

fn handle(request: tiny_http::Request, state: &Mutex<State>, port: u16) {
    let path = request.url().to_owned();
    let get = |name: &'static str| {
        (request.headers().iter())
            .find(|h| h.field.equiv(name))
            .map(|h| h.value.as_str().to_owned())
    };
    let (range, authorization, host) = (get("Range"), get("Authorization"), get("Host"));
    let (mode, name) = path
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or(("", ""));
    let (mode, name) = (mode.to_owned(), name.to_owned());
    let (file, hits) = {
        let mut s = state.lock().unwrap();
        let hits = s.hits.entry(path.clone()).or_insert(0);
        *hits += 1;
        let hits = *hits;
        (s.files.get(&name).cloned(), hits)
    };
    let log = |sent: u64| {
        state.lock().unwrap().log.push(Logged {
            path: path.clone(),
            host: host.clone().unwrap_or_default(),
            range: range.clone(),
            authorization: authorization.clone(),
            sent,
        });
    };
    let status = |code: u16| Response::empty(StatusCode(code));
    let Some(file) = file else {
        log(0);
        let _ = request.respond(status(404));
        return;
    };
    let len = file.len() as u64;
    let whole = |file: &Arc<Vec<u8>>, chunked: bool| {
        let length = (!chunked).then_some(file.len());
        let response = Response::new(
            StatusCode(200),
            vec![],
            std::io::Cursor::new(file.to_vec()),
            length,
            None,
        );
        // tiny_http chunks long answers unless told not to.
        if chunked {
            response.with_chunked_threshold(0)
        } else {
            response.with_chunked_threshold(usize::MAX)
        }
    };
    let ranged = range.as_deref().and_then(|r| parse_range(r, len));
    // Bytes a..=body_end as the body, `extra` more, Content-Range `claimed`.
    let part =
        |a: u64, body_end: u64, extra: usize, declared: Option<usize>, claimed: (u64, u64)| {
            let mut body = file[a as usize..=body_end as usize].to_vec();
            body.extend(std::iter::repeat_n(0xAB, extra));
            let body_len = body.len();
            let (c0, c1) = claimed;
            let headers = vec![header("Content-Range", &format!("bytes {c0}-{c1}/{len}"))];
            (
                Response::new(
                    StatusCode(206),
                    headers,
                    std::io::Cursor::new(body),
                    Some(declared.unwrap_or(body_len)),
                    None,
                )
                .with_chunked_threshold(usize::MAX),
                body_len as u64,
            )
        };
    let unsatisfiable = || {
        Response::empty(StatusCode(416))
            .with_header(header("Content-Range", &format!("bytes */{len}")))
    };
    match mode.as_str() {
        "f" | "e500" if mode == "f" || hits > 2 => match (range.as_deref(), ranged) {
            (None, _) => {
                log(len);
                let _ = request.respond(whole(&file, false));
            }
            (Some(_), Some((a, b))) => {
                let (response, sent) = part(a, b, 0, None, (a, b));
                log(sent);
                let _ = request.respond(response);
            }
            (Some(_), None) => {
                log(0);
                let _ = request.respond(unsatisfiable());
            }
        },
        "e500" => {
            log(0);
            let _ = request.respond(status(500));
        }
        "norange" | "nolength" => {
            log(len);
            let _ = request.respond(whole(&file, mode == "nolength"));
        }
        "r416" => {
            log(0);
            let _ = request.respond(unsatisfiable());
        }
        "short" | "long" | "wrongstart" | "lielength" => {
            let Some((a, b)) = ranged else {
                log(0);
                let _ = request.respond(unsatisfiable());
                return;
            };
            let (response, sent) = match mode.as_str() {
                "short" => part(a, a + (b - a) / 2, 0, None, (a, b)),
                "long" => part(a, b, 1000, None, (a, b)),
                "wrongstart" => part(a, b, 0, None, (a + 1, b)),
                _ => part(a, b, 0, Some((b - a + 1) as usize + 1000), (a, b)),
            };
            log(sent);
            let _ = request.respond(response);
        }
        "e404" | "e401" => {
            log(0);
            let _ = request.respond(status(if mode == "e404" { 404 } else { 401 }));
        }
        "stall" => {
            log(0);
            std::thread::sleep(Duration::from_secs(30));
            let _ = request.respond(status(500));
        }
        "redirect" | "redirect-same" => {
            log(0);
            let host = if mode == "redirect" {
                "localhost"
            } else {
                "127.0.0.1"
            };
            let location = format!("http://{host}:{port}/f/{name}");
            let _ = request.respond(status(302).with_header(header("Location", &location)));
        }
        _ => {
            log(0);
            let _ = request.respond(status(400));
        }
    }
}
