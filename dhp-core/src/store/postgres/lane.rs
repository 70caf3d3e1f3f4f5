//! The checkpoint lane: a connection of its own for the one hot call,
//! spoken in the wire protocol directly over a blocking socket (issue 49).
//!
//! The `postgres` crate runs every call inside a tokio current-thread
//! runtime (`block_on` around a client half and a connection half that
//! talk through channels); on a worker that checkpoints in a loop that
//! machinery was about three quarters of the worker's CPU per checkpoint
//! (benches/flame-checkpoint-pg.svg). Here a checkpoint is what libpq does
//! for pgbench: one `write` of Bind/Execute/Sync, one blocking `read` of
//! the reply, each statement prepared once per lane. The lane carries the
//! worker's hot calls: a checkpoint (`dhp_checkpoint_v2`, or the envelope
//! read and `dhp_checkpoint_steps_v1` when it counts steps) and a
//! heartbeat (`dhp_heartbeat_v1`).
//!
//! The lane is only an accelerator. It is opened when the URL can be
//! served without TLS (`sslmode=disable`, a Unix socket, or `prefer` and a
//! server that declines TLS), with cleartext, MD5 or SCRAM-SHA-256
//! authentication; anything else ([`Lane::open`] returns `None`) and the
//! checkpoint goes through the store's main connection as before. Its
//! answer is the function's row, judged by the runner exactly as the main
//! connection's; a failure after the call was sent is the same typed store
//! error (a lost server is [`crate::Error::is_server_lost`], so a worker
//! rides it as before: the checkpoint in flight is settled by reading it
//! back on the main connection).

use bytes::BytesMut;
use postgres::config::{Host, SslMode, TargetSessionAttrs};
use postgres::fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use postgres_protocol::message::{backend, frontend};
use postgres_protocol::types as pt;
use postgres_protocol::IsNull;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// A statement the lane prepares: its name on the lane's session, its
/// text, and the types (OIDs) of its parameters and result columns, which
/// are checked against the server's description when it is prepared.
pub(super) struct Stmt {
    pub name: &'static str,
    pub sql: &'static str,
    pub params: &'static [u32],
    pub results: &'static [u32],
}

/// Type OIDs.
pub(super) const BOOL: u32 = 16;
pub(super) const INT8: u32 = 20;
pub(super) const INT4: u32 = 23;
pub(super) const TEXT: u32 = 25;
pub(super) const FLOAT8: u32 = 701;

/// A parameter, sent in binary.
#[derive(Clone, Copy)]
pub(super) enum Param<'a> {
    I4(i32),
    I8(i64),
    F8(f64),
    T(&'a str),
}

/// A lane failure. `Db` is the server's error (SQLSTATE and message);
/// `Io` the socket's; `Protocol` a reply the lane did not expect.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaneError {
    /// The socket failed (the connection broke, or could not be made).
    #[error("checkpoint lane: {0}")]
    Io(#[from] io::Error),
    /// The server answered with an error.
    #[error("{message} ({code})")]
    Db {
        /// The SQLSTATE.
        code: String,
        /// The server's message.
        message: String,
    },
    /// A reply that is not the protocol's.
    #[error("checkpoint lane: unexpected reply from the server: {0}")]
    Protocol(String),
}

impl LaneError {
    /// The SQLSTATE, for a server error.
    pub fn code(&self) -> Option<&str> {
        match self {
            LaneError::Db { code, .. } => Some(code),
            _ => None,
        }
    }
}

type LaneResult<T> = std::result::Result<T, LaneError>;

/// One result row, its columns as sent (binary; `None` is NULL).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct RawRow {
    /// The row's bytes as read (shared with the read buffer, not copied).
    buf: bytes::Bytes,
    /// Each column's place in `buf`; `None` is NULL.
    cols: Vec<Option<std::ops::Range<usize>>>,
}

impl RawRow {
    fn col(&self, i: usize) -> LaneResult<Option<&[u8]>> {
        let col = self.cols.get(i).ok_or_else(|| LaneError::Protocol(format!("no column {i}")))?;
        Ok(col.clone().map(|r| &self.buf[r]))
    }
    fn typed<T>(
        &self,
        i: usize,
        f: impl Fn(&[u8]) -> Result<T, Box<dyn std::error::Error + Sync + Send>>,
    ) -> LaneResult<Option<T>> {
        self.col(i)?.map(|b| f(b).map_err(|e| LaneError::Protocol(format!("column {i}: {e}")))).transpose()
    }
    /// A text column.
    pub fn text(&self, i: usize) -> LaneResult<Option<String>> {
        self.typed(i, |b| pt::text_from_sql(b).map(str::to_string))
    }
    /// An int8 column.
    pub fn int8(&self, i: usize) -> LaneResult<Option<i64>> {
        self.typed(i, pt::int8_from_sql)
    }
    /// A float8 column.
    pub fn float8(&self, i: usize) -> LaneResult<Option<f64>> {
        self.typed(i, pt::float8_from_sql)
    }
    /// A bool column.
    pub fn boolean(&self, i: usize) -> LaneResult<Option<bool>> {
        self.typed(i, pt::bool_from_sql)
    }
}

enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Sock {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Sock::Tcp(s) => s.set_read_timeout(t),
            Sock::Unix(s) => s.set_read_timeout(t),
        }
    }
    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Sock::Tcp(s) => s.set_nonblocking(on),
            Sock::Unix(s) => s.set_nonblocking(on),
        }
    }
    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Sock::Tcp(s) => s.set_write_timeout(t),
            Sock::Unix(s) => s.set_write_timeout(t),
        }
    }
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One session with the statement prepared.
pub(super) struct Lane {
    sock: Sock,
    rbuf: BytesMut,
    wbuf: BytesMut,
    /// The statements prepared on this session, by name.
    prepared: Vec<&'static str>,
    /// While opening: the end of the connect timeout, which bounds the
    /// whole handshake (as the main connection's), not each read.
    deadline: Option<Instant>,
}

/// Why a configuration gets no lane (the main connection serves it).
fn unsupported(config: &postgres::Config) -> bool {
    !config.get_hostaddrs().is_empty()
        || config.get_ssl_mode() == SslMode::Require
        || config.get_ssl_negotiation() != postgres::config::SslNegotiation::Postgres
        || config.get_channel_binding() == postgres::config::ChannelBinding::Require
        || config.get_user().is_none()
        || config.get_load_balance_hosts() != postgres::config::LoadBalanceHosts::Disable
}

impl Lane {
    /// A session on the first host of `config` that suits its
    /// `target_session_attrs`, with the statement prepared: `Ok(None)` when
    /// the lane cannot serve this configuration (TLS in use, an
    /// authentication it does not speak, no host that suits), an error
    /// when no host could be reached or the server refused.
    pub(super) fn open(config: &postgres::Config, timeout: Duration) -> LaneResult<Option<Lane>> {
        if unsupported(config) {
            return Ok(None);
        }
        let ports = config.get_ports();
        let mut last = None;
        for (i, host) in config.get_hosts().iter().enumerate() {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            match Self::open_host(config, host, port, timeout) {
                Ok(Some(lane)) => return Ok(Some(lane)),
                Ok(None) => return Ok(None),
                Err(e) => last = Some(e),
            }
        }
        match last {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    fn open_host(config: &postgres::Config, host: &Host, port: u16, timeout: Duration) -> LaneResult<Option<Lane>> {
        let sock = match host {
            Host::Tcp(name) => {
                let addrs = std::net::ToSocketAddrs::to_socket_addrs(&(name.as_str(), port))?;
                let mut found = None;
                let mut err = io::Error::new(io::ErrorKind::NotFound, format!("{name} resolves to no address"));
                for a in addrs {
                    match TcpStream::connect_timeout(&a, timeout) {
                        Ok(s) => {
                            found = Some(s);
                            break;
                        }
                        Err(e) => err = e,
                    }
                }
                let s = found.ok_or(err)?;
                s.set_nodelay(true)?;
                // As the main connection: a dead server or network is
                // noticed within seconds.
                let sref = socket2::SockRef::from(&s);
                let ka = socket2::TcpKeepalive::new()
                    .with_time(config.get_keepalives_idle())
                    .with_interval(config.get_keepalives_interval().unwrap_or(Duration::from_secs(1)))
                    .with_retries(config.get_keepalives_retries().unwrap_or(3));
                sref.set_tcp_keepalive(&ka)?;
                sref.set_tcp_user_timeout(config.get_tcp_user_timeout().copied())?;
                Sock::Tcp(s)
            }
            Host::Unix(dir) => Sock::Unix(UnixStream::connect(dir.join(format!(".s.PGSQL.{port}")))?),
        };
        // The handshake is bounded as a whole; a call afterwards as the main
        // connection's (the server's statement_timeout, the socket's
        // keepalives, and `dhp work`'s bound on one round trip).
        sock.set_write_timeout(Some(timeout))?;
        let mut lane = Lane {
            sock,
            rbuf: BytesMut::with_capacity(4096),
            wbuf: BytesMut::with_capacity(1024),
            prepared: Vec::new(),
            deadline: Some(Instant::now() + timeout),
        };
        if matches!(lane.sock, Sock::Tcp(_)) && config.get_ssl_mode() == SslMode::Prefer {
            frontend::ssl_request(&mut lane.wbuf);
            lane.send()?;
            let mut answer = [0u8; 1];
            lane.bound()?;
            lane.sock.read_exact(&mut answer)?;
            if answer[0] != b'N' {
                // The server would speak TLS: the main connection does.
                return Ok(None);
            }
        }
        if !lane.start(config)? {
            return Ok(None);
        }
        if !lane.suits(config.get_target_session_attrs())? {
            return Ok(None);
        }
        lane.deadline = None;
        lane.sock.set_read_timeout(None)?;
        lane.sock.set_write_timeout(None)?;
        Ok(Some(lane))
    }

    /// While opening: the next read may wait only until the deadline.
    fn bound(&mut self) -> LaneResult<()> {
        if let Some(d) = self.deadline {
            let left = d.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer within the connect timeout").into());
            }
            self.sock.set_read_timeout(Some(left))?;
        }
        Ok(())
    }

    fn send(&mut self) -> LaneResult<()> {
        self.sock.write_all(&self.wbuf)?;
        self.wbuf.clear();
        Ok(())
    }

    /// The next message from the server.
    fn next(&mut self) -> LaneResult<backend::Message> {
        loop {
            if let Some(m) = backend::Message::parse(&mut self.rbuf)? {
                return Ok(m);
            }
            self.bound()?;
            let len = self.rbuf.len();
            self.rbuf.resize(len + 8192, 0);
            let n = match self.sock.read(&mut self.rbuf[len..]) {
                Ok(n) => n,
                Err(e) => {
                    self.rbuf.truncate(len);
                    return Err(e.into());
                }
            };
            self.rbuf.truncate(len + n);
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection").into());
            }
        }
    }

    /// Start-up and authentication; false when the server asks for an
    /// authentication the lane does not speak.
    fn start(&mut self, config: &postgres::Config) -> LaneResult<bool> {
        let user = config.get_user().unwrap_or_default();
        let mut params: Vec<(&str, &str)> = vec![("client_encoding", "UTF8"), ("user", user)];
        if let Some(db) = config.get_dbname() {
            params.push(("database", db));
        }
        if let Some(o) = config.get_options() {
            params.push(("options", o));
        }
        if let Some(a) = config.get_application_name() {
            params.push(("application_name", a));
        }
        frontend::startup_message(params, &mut self.wbuf)?;
        self.send()?;
        let password = config.get_password().unwrap_or_default();
        let mut scram: Option<ScramSha256> = None;
        loop {
            match self.next()? {
                backend::Message::AuthenticationOk => break,
                backend::Message::AuthenticationCleartextPassword => {
                    frontend::password_message(password, &mut self.wbuf)?;
                    self.send()?;
                }
                backend::Message::AuthenticationMd5Password(body) => {
                    let hash = postgres_protocol::authentication::md5_hash(user.as_bytes(), password, body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.wbuf)?;
                    self.send()?;
                }
                backend::Message::AuthenticationSasl(body) => {
                    let mut mechs = body.mechanisms();
                    let mut has = false;
                    while let Some(m) = FallibleIterator::next(&mut mechs)? {
                        has |= m == SCRAM_SHA_256;
                    }
                    if !has {
                        return Ok(false);
                    }
                    let s = ScramSha256::new(password, ChannelBinding::unsupported());
                    frontend::sasl_initial_response(SCRAM_SHA_256, s.message(), &mut self.wbuf)?;
                    self.send()?;
                    scram = Some(s);
                }
                backend::Message::AuthenticationSaslContinue(body) => {
                    let s =
                        scram.as_mut().ok_or_else(|| LaneError::Protocol("SASL continue without a start".into()))?;
                    s.update(body.data())?;
                    frontend::sasl_response(s.message(), &mut self.wbuf)?;
                    self.send()?;
                }
                backend::Message::AuthenticationSaslFinal(body) => {
                    let s = scram.as_mut().ok_or_else(|| LaneError::Protocol("SASL final without a start".into()))?;
                    s.finish(body.data())?;
                }
                backend::Message::ErrorResponse(body) => return Err(db_error(&body)),
                backend::Message::AuthenticationGss
                | backend::Message::AuthenticationKerberosV5
                | backend::Message::AuthenticationScmCredential
                | backend::Message::AuthenticationSspi
                | backend::Message::AuthenticationGssContinue(_) => return Ok(false),
                other => return Err(unexpected(&other)),
            }
        }
        self.until_ready()?;
        Ok(true)
    }

    /// Read to ReadyForQuery; the first server error seen is returned.
    fn until_ready(&mut self) -> LaneResult<()> {
        let mut err = None;
        loop {
            match self.next()? {
                backend::Message::ReadyForQuery(_) => return err.map_or(Ok(()), Err),
                backend::Message::ErrorResponse(body) => {
                    err.get_or_insert(db_error(&body));
                }
                _ => {}
            }
        }
    }

    /// `target_session_attrs`, judged as the `postgres` crate does (`SHOW
    /// transaction_read_only`).
    fn suits(&mut self, attrs: TargetSessionAttrs) -> LaneResult<bool> {
        if attrs == TargetSessionAttrs::Any {
            return Ok(true);
        }
        frontend::query("SHOW transaction_read_only", &mut self.wbuf)?;
        self.send()?;
        let mut read_only = None;
        let mut err = None;
        loop {
            match self.next()? {
                backend::Message::DataRow(row) => {
                    let mut ranges = row.ranges();
                    if let Some(Some(r)) = FallibleIterator::next(&mut ranges)? {
                        read_only = Some(&row.buffer()[r] == b"on");
                    }
                }
                backend::Message::ErrorResponse(body) => {
                    err.get_or_insert(db_error(&body));
                }
                backend::Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        if let Some(e) = err {
            return Err(e);
        }
        let read_only = read_only.ok_or_else(|| LaneError::Protocol("SHOW transaction_read_only: no row".into()))?;
        Ok(match attrs {
            TargetSessionAttrs::ReadWrite => !read_only,
            TargetSessionAttrs::ReadOnly => read_only,
            _ => true,
        })
    }

    /// Parse and describe `stmt` once on this session; its parameter and
    /// result types are checked against what the lane encodes and decodes.
    fn prepare(&mut self, stmt: &Stmt) -> LaneResult<()> {
        frontend::parse(stmt.name, stmt.sql, stmt.params.iter().copied(), &mut self.wbuf)?;
        frontend::describe(b'S', stmt.name, &mut self.wbuf)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        let mut err = None;
        let mut result = None;
        loop {
            match self.next()? {
                backend::Message::ErrorResponse(body) => {
                    err.get_or_insert(db_error(&body));
                }
                backend::Message::RowDescription(body) => {
                    let mut oids = Vec::new();
                    let mut fields = body.fields();
                    while let Some(f) = FallibleIterator::next(&mut fields)? {
                        oids.push(f.type_oid());
                    }
                    result = Some(oids);
                }
                backend::Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        if let Some(e) = err {
            return Err(e);
        }
        match result {
            Some(oids) if oids == stmt.results => {
                self.prepared.push(stmt.name);
                Ok(())
            }
            other => Err(LaneError::Protocol(format!(
                "{} returns columns of types {other:?}, expected {:?}",
                stmt.name, stmt.results
            ))),
        }
    }

    /// One call of `stmt` (prepared first if it is not yet): Bind, Execute
    /// and Sync in one write; its first row back, if any.
    pub(super) fn call(&mut self, stmt: &Stmt, params: &[Param<'_>]) -> LaneResult<Option<RawRow>> {
        if !self.prepared.contains(&stmt.name) {
            self.prepare(stmt)?;
        }
        let bound = frontend::bind(
            "",
            stmt.name,
            [1],
            params,
            |v, buf| {
                match v {
                    Param::I4(x) => pt::int4_to_sql(*x, buf),
                    Param::I8(x) => pt::int8_to_sql(*x, buf),
                    Param::F8(x) => pt::float8_to_sql(*x, buf),
                    Param::T(s) => pt::text_to_sql(s, buf),
                }
                Ok(IsNull::No)
            },
            [1],
            &mut self.wbuf,
        );
        if bound.is_err() {
            self.wbuf.clear();
            return Err(LaneError::Protocol(format!("cannot encode the arguments of {}", stmt.name)));
        }
        frontend::execute("", 0, &mut self.wbuf)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        let mut row = None;
        let mut err = None;
        loop {
            match self.next()? {
                backend::Message::DataRow(body) if row.is_none() => row = Some(raw(&body, stmt.results.len())?),
                backend::Message::ErrorResponse(body) => {
                    err.get_or_insert(db_error(&body));
                }
                backend::Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        match err {
            Some(e) => Err(e),
            None => Ok(row),
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        // Best effort, never waiting: a session told to end frees its backend
        // at once; a socket that cannot take the five bytes now (a peer that
        // stopped reading) is simply closed. What a failed send left in the
        // buffer is not sent.
        self.wbuf.clear();
        frontend::terminate(&mut self.wbuf);
        if self.sock.set_nonblocking(true).is_ok() {
            let _ = self.sock.write(&self.wbuf);
        }
    }
}

fn db_error(body: &backend::ErrorResponseBody) -> LaneError {
    let (mut code, mut message) = (String::new(), String::new());
    let mut fields = body.fields();
    while let Ok(Some(f)) = FallibleIterator::next(&mut fields) {
        match f.type_() {
            b'C' => code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'M' => message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            _ => {}
        }
    }
    LaneError::Db { code, message }
}

fn unexpected(m: &backend::Message) -> LaneError {
    let name = match m {
        backend::Message::DataRow(_) => "DataRow",
        backend::Message::ReadyForQuery(_) => "ReadyForQuery",
        backend::Message::ParameterStatus(_) => "ParameterStatus",
        backend::Message::BackendKeyData(_) => "BackendKeyData",
        _ => "another message",
    };
    LaneError::Protocol(format!("{name} during authentication"))
}

/// A row's columns, as many as the statement's description said.
fn raw(body: &backend::DataRowBody, want: usize) -> LaneResult<RawRow> {
    let mut cols = Vec::with_capacity(want);
    let mut ranges = body.ranges();
    while let Some(r) = FallibleIterator::next(&mut ranges)? {
        cols.push(r);
    }
    if cols.len() != want {
        return Err(LaneError::Protocol(format!("a row of {} columns, expected {want}", cols.len())));
    }
    Ok(RawRow { buf: body.buffer_bytes().clone(), cols })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    /// A DataRow message of `cols` (None: NULL).
    fn data_row(cols: &[Option<Vec<u8>>]) -> backend::DataRowBody {
        let mut body = BytesMut::new();
        body.put_u16(cols.len() as u16);
        for c in cols {
            match c {
                None => body.put_i32(-1),
                Some(b) => {
                    body.put_i32(b.len() as i32);
                    body.put_slice(b);
                }
            }
        }
        let mut msg = BytesMut::new();
        msg.put_u8(b'D');
        msg.put_i32(body.len() as i32 + 4);
        msg.put_slice(&body);
        match backend::Message::parse(&mut msg) {
            Ok(Some(backend::Message::DataRow(r))) => r,
            other => panic!("not a data row: {:?}", other.map(|m| m.is_some())),
        }
    }

    #[test]
    fn a_row_decodes_column_by_column_in_binary() {
        let t = |s: &str| Some(s.as_bytes().to_vec());
        let i8 = |x: i64| Some(x.to_be_bytes().to_vec());
        let f8 = |x: f64| Some(x.to_be_bytes().to_vec());
        let b = |x: bool| Some(vec![u8::from(x)]);
        let row = raw(&data_row(&[t("w1"), i8(3), f8(10.5), b(true), None]), 5).unwrap();
        assert_eq!(row.text(0).unwrap().as_deref(), Some("w1"));
        assert_eq!(row.int8(1).unwrap(), Some(3));
        assert_eq!(row.float8(2).unwrap(), Some(10.5));
        assert_eq!(row.boolean(3).unwrap(), Some(true));
        assert_eq!(row.int8(4).unwrap(), None, "NULL stays None");
        assert!(matches!(row.text(5), Err(LaneError::Protocol(_))), "no sixth column");
    }

    #[test]
    fn rows_of_another_shape_are_protocol_errors_not_guesses() {
        let short = data_row(&[Some(b"w1".to_vec())]);
        assert!(matches!(raw(&short, 10), Err(LaneError::Protocol(_))));
        // An int8 column of four bytes, a bool of two.
        let row = raw(&data_row(&[Some(vec![0, 0, 0, 1]), Some(vec![1, 1])]), 2).unwrap();
        assert!(matches!(row.int8(0), Err(LaneError::Protocol(_))));
        assert!(matches!(row.boolean(1), Err(LaneError::Protocol(_))));
    }

    /// A server that accepts and never answers: opening the lane gives up
    /// after the connect timeout (the whole handshake), as the main
    /// connection does.
    #[test]
    fn a_silent_server_is_given_up_on_within_the_connect_timeout() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let held = std::thread::spawn(move || listener.accept().map(|(s, _)| s));
        let config: postgres::Config = format!("host=127.0.0.1 port={port} user=u dbname=d").parse().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let started = Instant::now();
        std::thread::spawn(move || {
            let _ = tx.send(Lane::open(&config, Duration::from_millis(400)).map(|l| l.is_some()));
        });
        let res = rx.recv_timeout(Duration::from_secs(10)).expect("the open returned");
        assert!(matches!(res, Err(LaneError::Io(_))), "{res:?}");
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
        drop(held);
    }

    /// Closing a lane whose peer stopped reading (its socket buffers full)
    /// does not wait for the peer.
    #[test]
    fn dropping_a_lane_never_waits_for_a_peer_that_stopped_reading() {
        let (ours, peer) = UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let chunk = [0u8; 65536];
        while (&ours).write(&chunk).is_ok() {}
        ours.set_nonblocking(false).unwrap();
        let lane = Lane {
            sock: Sock::Unix(ours),
            rbuf: BytesMut::new(),
            wbuf: BytesMut::from(&b"left over from a failed send"[..]),
            prepared: Vec::new(),
            deadline: None,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(lane);
            let _ = tx.send(());
        });
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok(), "the drop waited for the peer");
        drop(peer);
    }

    #[test]
    fn lane_errors_are_the_stores_kinds() {
        let lost = crate::Error::from(LaneError::Db { code: "57P01".into(), message: "terminating".into() });
        assert!(lost.is_server_lost());
        let read_only = crate::Error::from(LaneError::Db { code: "25006".into(), message: "read only".into() });
        assert!(read_only.is_server_lost());
        let broken = crate::Error::from(LaneError::Io(io::Error::from(io::ErrorKind::UnexpectedEof)));
        assert!(broken.is_server_lost());
        let deadlock = crate::Error::from(LaneError::Db { code: "40P01".into(), message: "deadlock".into() });
        assert!(deadlock.is_pg_deadlock() && !deadlock.is_server_lost());
        let statement = crate::Error::from(LaneError::Db { code: "23505".into(), message: "dup".into() });
        assert!(!statement.is_server_lost() && !statement.is_pg_deadlock());
    }
}
