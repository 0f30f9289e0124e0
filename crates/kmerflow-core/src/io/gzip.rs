//! gzip input read as gzip(1) reads it: members one after another, and zero bytes padding the
//! end of the file (as tape and block copies leave them) ignored with a warning. Other bytes
//! after the last member are corrupt data.

use crate::run::RunContext;
use flate2::bufread::GzDecoder;
use std::io::{self, BufRead, Read};

/// A decompressed gzip stream of any number of members.
pub(crate) struct GzipMembers<R: BufRead> {
    state: State<R>,
    path: String,
    ctx: RunContext,
}

enum State<R: BufRead> {
    /// Inside a member (boxed: the decoder's state is large).
    Member(Box<GzDecoder<R>>),
    /// After a member: another member, zero padding or the end follows.
    Between(R),
    /// The end of the stream.
    Done,
}

impl<R: BufRead> GzipMembers<R> {
    /// Decompresses `input`, the content of `path` (named in the padding warning, which goes to
    /// the run `ctx`).
    pub(crate) fn new(input: R, path: &str, ctx: &RunContext) -> Self {
        // Starting between members: the stream may also begin with zero padding (a BGZF file's
        // padding, handed over by the BGZF decoder).
        let state = State::Between(input);
        GzipMembers { state, path: path.to_string(), ctx: ctx.clone() }
    }
}

/// Skips zero bytes to the end of `input`; an error at the first other byte.
fn skip_zero_padding(input: &mut impl BufRead) -> io::Result<()> {
    loop {
        let bytes = input.fill_buf()?;
        if bytes.is_empty() {
            return Ok(());
        }
        if bytes.iter().any(|&b| b != 0) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "non-zero bytes after zero padding"));
        }
        let n = bytes.len();
        input.consume(n);
    }
}

impl<R: BufRead> Read for GzipMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Member(mut member) => match member.read(buf) {
                    Ok(0) => self.state = State::Between((*member).into_inner()),
                    result => {
                        self.state = State::Member(member);
                        return result;
                    }
                },
                State::Between(mut input) => {
                    let first = match input.fill_buf() {
                        Ok(bytes) => bytes.first().copied(),
                        Err(e) => {
                            self.state = State::Between(input);
                            return Err(e);
                        }
                    };
                    match first {
                        None => return Ok(0),
                        Some(0) => {
                            skip_zero_padding(&mut input)?;
                            self.ctx.warning(format!(
                                "WARNING: {}: decompression OK, trailing zero bytes ignored",
                                self.path
                            ));
                            return Ok(0);
                        }
                        Some(_) => self.state = State::Member(Box::new(GzDecoder::new(input))),
                    }
                }
                State::Done => return Ok(0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn decompress(bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        GzipMembers::new(bytes, "x.gz", &RunContext::new()).read_to_end(&mut out).map(|_| out)
    }

    #[test]
    fn members_follow_each_other_and_zero_padding_is_ignored() {
        let two = [gzip(b"@a\n"), gzip(b"ACGT\n")].concat();
        assert_eq!(decompress(&two).unwrap(), b"@a\nACGT\n");
        let padded = [two.clone(), vec![0; 5000]].concat();
        assert_eq!(decompress(&padded).unwrap(), b"@a\nACGT\n");
        assert!(decompress(&[two.clone(), vec![0, 0, 7]].concat()).is_err());
        assert!(decompress(&[two, b"garbage".to_vec()].concat()).is_err());
        assert!(decompress(&gzip(b"ACGT")[..10]).is_err());
    }
}
