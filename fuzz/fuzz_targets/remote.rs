//! Remote headers from a server the input controls: byte 0 picks how the server answers
//! (ranges honoured, `Range` ignored, a body shorter or longer than its Content-Range, a range
//! from the wrong start, a length that lies, a 500 first, a 416, half of each range asked
//! for), byte 1 the first window
//! (1 byte to 64 KiB, so that the window estimate starts from every kind of prefix), the rest is
//! the file. Never a panic, a few requests at most; what the reader hands back is always the
//! file's own first bytes, and from an honest server (or one that ignores `Range`, or sends
//! more than asked) the header is accepted or refused exactly as the same bytes on disk are.
#![no_main]

use ggufrw::remote::{self, Options};
use ggufrw::{Error, Gguf};
use std::io::{Cursor, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

ggufrw_fuzz::target!(run);

/// How the server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Honest,
    IgnoresRange,
    ShortBody,
    LongBody,
    WrongStart,
    LyingLength,
    FirstFails,
    Refuses,
    /// Half of each range asked for, and a Content-Range that says so (a server may send
    /// less than asked).
    Halves,
}

const MODES: [Mode; 9] = [
    Mode::Honest,
    Mode::IgnoresRange,
    Mode::ShortBody,
    Mode::LongBody,
    Mode::WrongStart,
    Mode::LyingLength,
    Mode::FirstFails,
    Mode::Refuses,
    Mode::Halves,
];

/// What the server serves now, and how many requests it has answered for it.
struct Served {
    file: Vec<u8>,
    mode: Mode,
    requests: u32,
}

static SERVED: Mutex<Served> = Mutex::new(Served {
    file: Vec::new(),
    mode: Mode::Honest,
    requests: 0,
});

/// The server's port: one thread, one connection at a time, started once.
fn port() -> u16 {
    static PORT: OnceLock<u16> = OnceLock::new();
    *PORT.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
        let port = listener.local_addr().expect("its address").port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = answer(stream);
            }
        });
        port
    })
}

/// `bytes=a-b` in the request head, if any.
fn range_asked(head: &[u8]) -> Option<(u64, u64)> {
    let text = std::str::from_utf8(head).ok()?;
    let line = text
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("range:"))?;
    let (a, b) = line[6..].trim().strip_prefix("bytes=")?.split_once('-')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Answers one request. Everything is written from the stack or the served file, so that the
/// thread allocates nothing the leak check could see.
fn answer(mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut head = [0u8; 4096];
    let mut n = 0;
    while !head[..n].windows(4).any(|w| w == b"\r\n\r\n") && n < head.len() {
        let got = stream.read(&mut head[n..])?;
        if got == 0 {
            return Ok(());
        }
        n += got;
    }
    let served = SERVED.lock().unwrap_or_else(|e| e.into_inner());
    let (file, len) = (&served.file[..], served.file.len() as u64);
    let mut out = Cursor::new([0u8; 512]);
    let extra = [0xa5u8; 1000];
    let (status, from, body, more): (&str, u64, &[u8], &[u8]) =
        match (served.mode, range_asked(&head[..n])) {
            (Mode::Refuses, _) => ("416 Range Not Satisfiable", 0, &[], &[]),
            (Mode::FirstFails, _) if served.requests == 0 => {
                ("500 Internal Server Error", 0, &[], &[])
            }
            (Mode::IgnoresRange, _) | (_, None) => ("200 OK", 0, file, &[]),
            (_, Some((a, _))) if a >= len => ("416 Range Not Satisfiable", 0, &[], &[]),
            (mode, Some((a, b))) => {
                let a = if mode == Mode::WrongStart { a + 1 } else { a }.min(len);
                let b = (b + 1).min(len).max(a);
                let mut body = &file[a as usize..b as usize];
                if mode == Mode::Halves {
                    body = &body[..body.len().div_ceil(2)];
                }
                let more: &[u8] = if mode == Mode::LongBody { &extra } else { &[] };
                ("206 Partial Content", a, body, more)
            }
        };
    // The range the Content-Range header gives; a short body is half of it.
    let claimed = body.len() as u64;
    let body = if served.mode == Mode::ShortBody {
        &body[..body.len() / 2]
    } else {
        body
    };
    let total = if served.mode == Mode::LyingLength {
        len + 1000
    } else {
        len
    };
    write!(out, "HTTP/1.1 {status}\r\nConnection: close\r\n")?;
    if status.starts_with("206") {
        let (a, b) = (from, (from + claimed).max(from + 1) - 1);
        write!(out, "Content-Range: bytes {a}-{b}/{total}\r\n")?;
    } else if status.starts_with("416") {
        write!(out, "Content-Range: bytes */{total}\r\n")?;
    }
    write!(out, "Content-Length: {}\r\n\r\n", body.len() + more.len())?;
    let end = out.position() as usize;
    stream.write_all(&out.get_ref()[..end])?;
    stream.write_all(body)?;
    stream.write_all(more)?;
    drop(served);
    SERVED.lock().unwrap_or_else(|e| e.into_inner()).requests += 1;
    Ok(())
}

fn run(data: &[u8]) {
    let [mode, window, file @ ..] = data else {
        return;
    };
    let mode = MODES[usize::from(*mode) % MODES.len()];
    {
        let mut served = SERVED.lock().unwrap_or_else(|e| e.into_inner());
        served.file.clear();
        served.file.extend_from_slice(file);
        served.mode = mode;
        served.requests = 0;
    }
    let options = Options {
        first_window: 1 << (window % 17),
        retries: 1,
        backoff: Duration::ZERO,
        read_timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(5),
        ..Options::default()
    };
    let url = format!("http://127.0.0.1:{}/model.gguf", port());
    let got = remote::open(&url, &options);
    let requests = SERVED.lock().unwrap_or_else(|e| e.into_inner()).requests;
    // A few requests for any header; a server that sends half of each range takes one more
    // for each halving.
    let halvings = match mode {
        Mode::Halves => 2 * (usize::BITS - file.len().leading_zeros()),
        _ => 0,
    };
    assert!(
        requests <= 8 + halvings,
        "{mode:?}: {requests} requests for a {}-byte file",
        file.len()
    );
    if let Ok(r) = &got {
        let fetched = r.file.bytes();
        assert!(
            file.get(..fetched.len()) == Some(fetched),
            "{mode:?}: the reader holds bytes the file does not have there"
        );
    }
    if !matches!(
        mode,
        Mode::Honest | Mode::IgnoresRange | Mode::LongBody | Mode::FirstFails | Mode::Halves
    ) {
        return;
    }
    let local = Gguf::from_bytes(file);
    match (&local, &got) {
        (Ok(l), Ok(r)) => {
            assert_eq!(r.len, file.len() as u64);
            assert_eq!(r.file.layout(), l.layout(), "{mode:?}: another layout");
            let end = (l.layout().data_offset as usize).min(file.len());
            assert!(
                r.file.bytes() == &file[..end],
                "{mode:?}: other bytes fetched"
            );
        }
        (Err(l), Err(r)) => match r.root() {
            Error::Decode(e) => assert_eq!(e.to_string(), l.to_string(), "{mode:?}"),
            other => panic!("{mode:?}: a remote failure ({other}) where the file says {l}"),
        },
        (Ok(_), Err(r)) => panic!("{mode:?}: refused remotely ({r}), accepted on disk"),
        (Err(l), Ok(_)) => panic!("{mode:?}: accepted remotely, refused on disk ({l})"),
    }
}
