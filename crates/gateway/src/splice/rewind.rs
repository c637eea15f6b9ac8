//! A connection handed from the spliced relay to hyper part-way: what the relay already read
//! of it is read again first, then the socket.
//!
//! Not here: deciding when a connection is handed over (`splice`).

use std::{
    io,
    pin::Pin,
    task::{Context, Poll},
};

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A stream with bytes already read from it put back in front.
pub(crate) struct Rewind<S> {
    before: Vec<Bytes>,
    stream: S,
}

impl<S> Rewind<S> {
    /// `stream`, read from after `taken` (a call's head and body, if any) and `rest` (what was
    /// read after them).
    pub(crate) fn new(stream: S, taken: Option<Bytes>, rest: BytesMut) -> Rewind<S> {
        let before = [taken, Some(rest.freeze())]
            .into_iter()
            .flatten()
            .filter(|b| !b.is_empty())
            .collect();
        Rewind { before, stream }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(first) = self.before.first_mut() {
            let n = first.len().min(buf.remaining());
            buf.put_slice(&first[..n]);
            first.advance(n);
            if first.is_empty() {
                self.before.remove(0);
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn what_was_read_comes_first_then_the_stream() {
        let stream: &[u8] = b" and after";
        let mut rest = BytesMut::new();
        rest.extend_from_slice(b"read");
        let mut rewound = Rewind::new(stream, Some(Bytes::from_static(b"taken, ")), rest);
        let mut all = String::new();
        rewound.read_to_string(&mut all).await.unwrap();
        assert_eq!(all, "taken, read and after");
    }
}
