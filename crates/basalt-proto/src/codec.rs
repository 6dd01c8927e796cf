//! The gRPC codec of the native API: prost's, except that a request that does not decode is
//! the client's error (`INVALID_ARGUMENT`, "malformed request"), not `INTERNAL`, which gRPC
//! clients and meshes read as a server bug (RELIABILITY.md D14).

use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{BufferSettings, DecodeBuf, Decoder};
use tonic::{Code, Status};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// The codec the generated code uses (`codec_path` in build.rs).
#[derive(Debug, Clone)]
pub struct Codec<T, U> {
    inner: ProstCodec<T, U>,
    _pd: PhantomData<(T, U)>,
}

impl<T, U> Default for Codec<T, U> {
    fn default() -> Self {
        Codec {
            inner: ProstCodec::default(),
            _pd: PhantomData,
        }
    }
}

impl<T, U> tonic::codec::Codec for Codec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ClientErrorDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        self.inner.encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        ClientErrorDecoder(self.inner.decoder())
    }
}

/// prost's decoder, with decode failures reported as the sender's error.
#[derive(Debug)]
pub struct ClientErrorDecoder<U>(ProstDecoder<U>);

impl<U: Message + Default> Decoder for ClientErrorDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.0.decode(buf).map_err(|s| {
            if s.code() == Code::Internal {
                Status::invalid_argument(format!("malformed request: {}", s.message()))
            } else {
                s
            }
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}
