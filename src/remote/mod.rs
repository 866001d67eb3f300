//! Headers over HTTP(S), without the tensor data: a [`RemoteReader`] fetches byte ranges of a
//! URL as the decoder asks for them and keeps what it fetched, so a 40 GB model's header costs
//! a few megabytes and a few requests.
//!
//! The first request asks for [`Options::first_window`] bytes; each later one for as much as
//! the fetched prefix says the header still needs (the schema reads what is complete; a cut
//! array's count and element type, or a cut list of tensor infos, say how long the rest is), so
//! a header usually arrives in two to four requests with a few percent to spare. Redirects are
//! followed (later ranges go straight to where the first was redirected), `Authorization:
//! Bearer` is sent when a token is given (never to another host after a redirect), connection
//! failures and 5xx answers are retried with backoff, and every call has timeouts. A server
//! that ignores `Range` is read as one stream, only as far as the header goes.
//!
//! The decoder reads the remote file exactly as it reads a local one (the file's length comes
//! from the server), so a remote header is accepted or refused with the same errors at the same
//! offsets as the same bytes on disk.

mod estimate;

pub use crate::error::RemoteError;
use crate::file::Gguf;
use crate::Error;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;
use ureq::http::{header, StatusCode, Uri};
use ureq::ResponseExt;

/// Whether `s` is an `http://` or `https://` URL (what the command line reads remotely).
pub fn is_url(s: &str) -> bool {
    let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// How remote reads behave.
#[derive(Clone, Debug)]
pub struct Options {
    /// Sent as `Authorization: Bearer …` to the URL's host (never to another host a redirect
    /// leads to). [`Options::from_env`] takes `HF_TOKEN`.
    pub token: Option<String>,
    /// Connecting (TCP and TLS).
    pub connect_timeout: Duration,
    /// Waiting for the response and for each read of its body.
    pub read_timeout: Duration,
    /// Retries of a range request after a connection failure or a 5xx answer (not after a
    /// timeout: a stalled server is reported, not waited on again).
    pub retries: u32,
    /// Wait before the first retry; doubled for each further one.
    pub backoff: Duration,
    /// Bytes asked for in the first request.
    pub first_window: u64,
    /// The longest header fetched; a longer one is refused (a server can say any length).
    pub max_header: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            token: None,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            retries: 3,
            backoff: Duration::from_millis(250),
            first_window: 256 << 10,
            max_header: 256 << 20,
        }
    }
}

impl Options {
    /// The defaults, with the token from `HF_TOKEN` when it is set.
    pub fn from_env() -> Self {
        Options {
            token: std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty()),
            ..Options::default()
        }
    }
}

/// What fetching a header cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// HTTP requests made (retries included).
    pub requests: u32,
    /// Body bytes received.
    pub bytes: u64,
}

/// A remote file's header and the bytes it takes.
#[derive(Debug)]
pub struct Remote<B = Vec<u8>> {
    /// The header, with the prefix of the file that holds it (up to the data section) as its
    /// bytes: `tensor_data` has nothing to give.
    pub file: Gguf<B>,
    /// The file's length, as the server says.
    pub len: u64,
    /// Requests and bytes it took.
    pub stats: Stats,
    /// The URL.
    pub url: String,
}

impl<B: AsRef<[u8]>> Remote<B> {
    /// The zero-copy view of the header, over the fetched bytes.
    pub fn view(&self) -> crate::Result<crate::view::GgufView<'_>> {
        crate::view::GgufView::new(self.file.bytes())
    }
}

/// Fetches and decodes the header at `url`. Errors name the URL.
pub fn open(url: &str, options: &Options) -> crate::Result<Remote> {
    open_as(url, options)
}

/// [`open`], the fetched bytes held as `B`.
pub fn open_as<B: From<Vec<u8>> + AsRef<[u8]>>(
    url: &str,
    options: &Options,
) -> crate::Result<Remote<B>> {
    let named = |e: Error| e.in_file(Path::new(url));
    let remote = |source| Error::Remote {
        url: url.to_owned(),
        source,
    };
    let mut reader = RemoteReader::open(url, options.clone()).map_err(remote)?;
    match ggufrw_schema::decode_header(&mut reader) {
        Ok(header) => {
            let layout = header.decoded_layout();
            let stats = reader.stats();
            let len = reader.len();
            let mut bytes = reader.into_fetched();
            bytes.truncate(usize::try_from(layout.data_offset).unwrap_or(usize::MAX));
            Ok(Remote {
                file: Gguf::from_parts(header, layout, B::from(bytes)),
                len,
                stats,
                url: url.to_owned(),
            })
        }
        Err(e) => Err(match reader.failure.take() {
            Some(failure) => remote(failure),
            None => named(Error::Decode(e)),
        }),
    }
}

/// Every shard's header when `url` names the first shard of a split model
/// (`…-00001-of-00003.gguf`, with `split.count` above 1), else the one file's; the other
/// shards' URLs are the first's with the shard number changed, as llama.cpp names them.
pub fn open_shards<B: From<Vec<u8>> + AsRef<[u8]>>(
    url: &str,
    options: &Options,
) -> crate::Result<Vec<Remote<B>>> {
    let first = open_as::<B>(url, options)?;
    let (path, query) = url
        .split_once('?')
        .map_or((url, None), |(p, q)| (p, Some(q)));
    // The name is the last segment; the rest of the URL stays as it is.
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    let Some(others) = crate::shards::other_shards(Path::new(name), &first.file) else {
        return Ok(vec![first]);
    };
    let mut shards = vec![first];
    for shard in others {
        let mut shard_url = format!("{dir}/{}", shard.to_string_lossy());
        if let Some(q) = query {
            shard_url.push('?');
            shard_url.push_str(q);
        }
        shards.push(open_as(&shard_url, options)?);
    }
    Ok(shards)
}

/// A `Content-Range` header's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ContentRange {
    /// First and last byte (inclusive); absent in `bytes */total`.
    range: Option<(u64, u64)>,
    /// The file's length; absent when `*`.
    total: Option<u64>,
}

/// The parts of `bytes start-end/total`.
fn content_range(value: &str) -> Option<ContentRange> {
    let rest = value.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let total = match total.trim() {
        "*" => None,
        n => Some(n.parse().ok()?),
    };
    let range = match range.trim() {
        "*" => None,
        r => {
            let (a, b) = r.split_once('-')?;
            let (a, b): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            (a <= b).then_some((a, b))?;
            Some((a, b))
        }
    };
    Some(ContentRange { range, total })
}

/// The host part of a URI, for deciding where the token may go.
fn authority(uri: &Uri) -> Option<String> {
    Some(format!(
        "{}://{}",
        uri.scheme_str()?,
        uri.authority()?.as_str().to_ascii_lowercase()
    ))
}

/// A failed attempt: whether another may help.
enum Attempt {
    Retry(String),
    Fail(RemoteError),
}

/// A `Read + Seek` over a remote file that fetches byte ranges as they are read (only
/// forwards from what it has: a header is read from its start, in order) and keeps them.
pub struct RemoteReader {
    agent: ureq::Agent,
    /// The URL as given.
    url: String,
    /// Where ranges are asked: the URL the first request was redirected to.
    target: Uri,
    /// The scheme and host the token belongs to.
    origin: Option<String>,
    options: Options,
    stats: Stats,
    /// The file's first bytes.
    fetched: Vec<u8>,
    len: u64,
    /// Whether a first answer has said the length.
    len_known: bool,
    pos: u64,
    /// A server that ignored `Range`: the rest of its answer, read as needed.
    stream: Option<ureq::BodyReader<'static>>,
    /// Why the last read failed, beyond what `io::Error` carries.
    failure: Option<RemoteError>,
}

impl std::fmt::Debug for RemoteReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteReader")
            .field("url", &self.url)
            .field("len", &self.len)
            .field("fetched", &self.fetched.len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl RemoteReader {
    /// Makes the first request (which tells the file's length).
    pub fn open(url: &str, options: Options) -> Result<RemoteReader, RemoteError> {
        if !is_url(url) {
            return Err(RemoteError::BadUrl(url.to_owned()));
        }
        let target: Uri = (url.parse()).map_err(|_| RemoteError::BadUrl(url.to_owned()))?;
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(10)
            .redirect_auth_headers(ureq::config::RedirectAuthHeaders::SameHost)
            .timeout_connect(Some(options.connect_timeout))
            .timeout_recv_response(Some(options.read_timeout))
            .timeout_per_read(Some(options.read_timeout))
            .user_agent(concat!("ggufrw/", env!("CARGO_PKG_VERSION")))
            .build();
        let mut reader = RemoteReader {
            agent: config.into(),
            url: url.to_owned(),
            origin: authority(&target),
            target,
            options,
            stats: Stats::default(),
            fetched: Vec::new(),
            len: 0,
            len_known: false,
            pos: 0,
            stream: None,
            failure: None,
        };
        let first = reader.options.first_window.max(1);
        reader.fetch(first)?;
        Ok(reader)
    }

    /// The file's length, as the server says.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Requests and bytes so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The bytes fetched: the file's first bytes.
    pub fn fetched(&self) -> &[u8] {
        &self.fetched
    }

    /// The bytes fetched, kept.
    pub fn into_fetched(self) -> Vec<u8> {
        self.fetched
    }

    /// Fetches up to `end` (exclusive), or to the end of the file.
    fn fetch(&mut self, end: u64) -> Result<(), RemoteError> {
        let mut failures = 0u32;
        loop {
            let have = self.fetched.len() as u64;
            if self.len_known && have >= end.min(self.len) {
                return Ok(());
            }
            let result = match self.stream.as_mut() {
                Some(stream) => {
                    let want = end.min(self.len) - have;
                    match read_into(stream, &mut self.fetched, want, &mut self.stats) {
                        Ok(n) if n < want => Err(Attempt::Retry(
                            "the answer ended before the file did".into(),
                        )),
                        Ok(_) => Ok(()),
                        Err(e) => Err(classify_io(&e)),
                    }
                }
                None => self.request(have, end),
            };
            match result {
                Ok(()) => {}
                Err(Attempt::Fail(e)) => return Err(e),
                Err(Attempt::Retry(why)) => {
                    self.stream = None;
                    failures += 1;
                    if failures > self.options.retries {
                        return Err(RemoteError::Transport(format!(
                            "{why} (after {failures} attempts)"
                        )));
                    }
                    std::thread::sleep(self.options.backoff * (1 << (failures - 1).min(10)));
                }
            }
        }
    }

    /// One request for `[start, end)`, its answer appended to what was fetched.
    fn request(&mut self, start: u64, end: u64) -> Result<(), Attempt> {
        let first = !self.len_known;
        let mut request = self
            .agent
            .get(&self.target)
            .header(header::RANGE, format!("bytes={start}-{}", end - 1));
        if let Some(token) = &self.options.token {
            if authority(&self.target) == self.origin {
                request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
            }
        }
        self.stats.requests += 1;
        let response = match request.call() {
            Ok(r) => r,
            Err(ureq::Error::Timeout(t)) => {
                return Err(Attempt::Fail(RemoteError::Transport(format!(
                    "timed out ({t}) after {:?}",
                    self.options.read_timeout
                ))))
            }
            Err(ureq::Error::TooManyRedirects) => {
                return Err(Attempt::Fail(RemoteError::Protocol(
                    "too many redirects".into(),
                )))
            }
            Err(ureq::Error::Io(e)) => return Err(classify_io(&e)),
            Err(e) => return Err(Attempt::Retry(e.to_string())),
        };
        if first {
            // Later ranges go straight to where this one was redirected.
            self.target = response.get_uri().clone();
        }
        let status = response.status();
        let range = (response.headers().get(header::CONTENT_RANGE))
            .and_then(|v| v.to_str().ok())
            .map(|v| content_range(v).ok_or_else(|| format!("unreadable Content-Range {v:?}")));
        let declared_len = (response.headers().get(header::CONTENT_LENGTH))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let mut body = response.into_body().into_reader();
        match status {
            StatusCode::PARTIAL_CONTENT => {
                let (range, total) = match range {
                    Some(Ok(ContentRange {
                        range: Some(range),
                        total,
                    })) => (range, total),
                    Some(Err(why)) => return Err(Attempt::Fail(RemoteError::Protocol(why))),
                    _ => {
                        return Err(Attempt::Fail(RemoteError::Protocol(
                            "206 without a byte range in Content-Range".into(),
                        )))
                    }
                };
                if first {
                    self.len = total.ok_or_else(|| {
                        Attempt::Fail(RemoteError::Protocol(
                            "206 without the file's length in Content-Range".into(),
                        ))
                    })?;
                    self.len_known = true;
                } else if let Some(total) = total.filter(|&t| t != self.len) {
                    return Err(Attempt::Fail(RemoteError::Protocol(format!(
                        "the file's length changed from {} to {total} bytes between requests",
                        self.len
                    ))));
                }
                if range.0 != start {
                    return Err(Attempt::Fail(RemoteError::Protocol(format!(
                        "asked for bytes from {start}, got bytes {}-{}",
                        range.0, range.1
                    ))));
                }
                // Only what was asked for, however long the body (the rest is dropped).
                let want = (range.1 + 1).min(end) - start;
                let n = read_into(&mut body, &mut self.fetched, want, &mut self.stats)
                    .map_err(|e| classify_io(&e))?;
                if n < want {
                    return Err(Attempt::Retry(format!(
                        "the answer ended after {n} of {want} bytes"
                    )));
                }
                Ok(())
            }
            StatusCode::OK => {
                // The server ignores Range: read its answer as a stream from here on.
                let len = declared_len.ok_or_else(|| {
                    Attempt::Fail(RemoteError::Protocol(
                        "the server ignores Range and does not say the file's length".into(),
                    ))
                })?;
                if first {
                    self.len = len;
                    self.len_known = true;
                } else if len != self.len {
                    return Err(Attempt::Fail(RemoteError::Protocol(format!(
                        "the file's length changed from {} to {len} bytes between requests",
                        self.len
                    ))));
                }
                let skipped = io::copy(&mut (&mut body).take(start), &mut io::sink())
                    .map_err(|e| classify_io(&e))?;
                self.stats.bytes += skipped;
                if skipped < start {
                    return Err(Attempt::Retry("the connection closed early".into()));
                }
                let want = end.min(self.len) - start;
                read_into(&mut body, &mut self.fetched, want, &mut self.stats)
                    .map_err(|e| classify_io(&e))?;
                self.stream = Some(body);
                Ok(())
            }
            StatusCode::RANGE_NOT_SATISFIABLE => match range {
                Some(Ok(ContentRange {
                    range: None,
                    total: Some(0),
                })) if first => {
                    self.len = 0;
                    self.len_known = true;
                    Ok(())
                }
                _ => Err(Attempt::Fail(RemoteError::Protocol(format!(
                    "the server refused bytes {start}-{} (416)",
                    end - 1
                )))),
            },
            s if s.is_server_error() => Err(Attempt::Retry(format!("HTTP {}", s.as_u16()))),
            s => Err(Attempt::Fail(RemoteError::Status {
                status: s.as_u16(),
                hint: match s.as_u16() {
                    401 | 403 => ": not allowed (a gated or private model needs HF_TOKEN)",
                    404 => ": no such file",
                    _ => "",
                },
            })),
        }
    }

    /// Fetches what a read ending at `need` requires, and as much more as the header probably
    /// needs.
    fn fill(&mut self, need: u64) -> Result<(), RemoteError> {
        let limit = self.options.max_header;
        if need > limit {
            return Err(RemoteError::TooLarge { limit });
        }
        let have = self.fetched.len() as u64;
        let target = match estimate::header_end(&self.fetched, self.len) {
            Some(end) => end.saturating_add((end.saturating_sub(have) / 16).max(64 << 10)),
            // Too short to say (not even the counts), or a nested array: twice as much, and
            // never less than the slack above, so that a tiny first window costs one request
            // more, not one per doubling.
            None => have.saturating_mul(2).max(have.saturating_add(64 << 10)),
        };
        let target = target.max(need).min(limit).min(self.len);
        self.fetch(target)
    }
}

/// Appends up to `n` bytes of `from` to `to`; how many came (fewer when it ended).
fn read_into(from: &mut impl Read, to: &mut Vec<u8>, n: u64, stats: &mut Stats) -> io::Result<u64> {
    let before = to.len();
    let result = from.take(n).read_to_end(to);
    let got = (to.len() - before) as u64;
    stats.bytes += got;
    result.map(|_| got)
}

fn classify_io(e: &io::Error) -> Attempt {
    if e.kind() == io::ErrorKind::TimedOut {
        Attempt::Fail(RemoteError::Transport(format!("timed out: {e}")))
    } else {
        Attempt::Retry(e.to_string())
    }
}

impl Read for RemoteReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.len || buf.is_empty() {
            return Ok(0);
        }
        let end = self.pos.saturating_add(buf.len() as u64).min(self.len);
        if end > self.fetched.len() as u64 {
            if let Err(e) = self.fill(end) {
                // The typed error is kept and returned by the caller; this only stops binrw.
                self.failure = Some(e);
                return Err(io::ErrorKind::Other.into());
            }
        }
        let fetched_end = (self.fetched.len() as u64).min(end);
        if fetched_end <= self.pos {
            return Ok(0);
        }
        let (a, b) = (self.pos as usize, fetched_end as usize);
        buf[..b - a].copy_from_slice(&self.fetched[a..b]);
        self.pos = fetched_end;
        Ok(b - a)
    }
}

impl Seek for RemoteReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = pos.ok_or(io::ErrorKind::InvalidInput)?;
        Ok(self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_parse() {
        let parts = |r, t| Some(ContentRange { range: r, total: t });
        assert_eq!(
            content_range("bytes 0-99/1000"),
            parts(Some((0, 99)), Some(1000))
        );
        assert_eq!(content_range("bytes */0"), parts(None, Some(0)));
        assert_eq!(content_range("bytes 5-9/*"), parts(Some((5, 9)), None));
        assert_eq!(content_range("bytes 9-5/10"), None);
        assert_eq!(content_range("items 0-1/2"), None);
    }

    #[test]
    fn urls_are_told_from_paths() {
        assert!(is_url("https://huggingface.co/x/resolve/main/m.gguf"));
        assert!(is_url("HTTP://127.0.0.1:8000/m.gguf"));
        assert!(!is_url("models/http.gguf"));
        assert!(!is_url("ftp://host/m.gguf"));
    }
}
