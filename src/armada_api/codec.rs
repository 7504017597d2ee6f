//! The codec of `serve`'s gRPC services: tonic-prost's, except that a request carrying a
//! field the contract does not define is refused (InvalidArgument) instead of decoded with
//! the field dropped.
//!
//! Why: prost, like every protobuf reader, skips unknown fields. For a write that is data
//! loss without a word: a client built from a newer or patched contract (a rule matcher in
//! the fields upstream reserved, 2–4 of `RetryRule`) would have its policy stored without
//! the matcher, retrying what it meant to fail. `serve` refuses unknown JSON keys over REST
//! for the same reason (`wire`). Answers are encoded as usual; the clients read answers
//! with tonic-prost's own codec (an answer's new fields are the server's business).

use std::marker::PhantomData;

use prost::bytes::Buf;
use prost::{Message, Name};
use tonic::codec::{Codec, DecodeBuf, Decoder};
use tonic::Status;
use tonic_prost::ProstEncoder;

use super::{listed_unknown_fields, unknown_fields, UnknownField};

/// tonic-prost's `ProstCodec` with [`StrictDecoder`]; named by the generated servers.
#[derive(Debug, Clone)]
pub struct StrictCodec<T, U> {
    _types: PhantomData<(T, U)>,
}

impl<T, U> Default for StrictCodec<T, U> {
    fn default() -> Self {
        StrictCodec { _types: PhantomData }
    }
}

impl<T, U> Codec for StrictCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Name + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = StrictDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::default()
    }

    fn decoder(&mut self) -> Self::Decoder {
        StrictDecoder { _type: PhantomData }
    }
}

/// Decodes `U`, refusing fields `U` does not define (at any depth).
#[derive(Debug)]
pub struct StrictDecoder<U> {
    _type: PhantomData<U>,
}

impl<U: Message + Name + Default> Decoder for StrictDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        // tonic hands over one whole message, contiguous.
        let len = buf.remaining();
        let unknown = if buf.chunk().len() >= len {
            unknown_fields::<U>(&buf.chunk()[..len])
        } else {
            let copy = buf.copy_to_bytes(len);
            let unknown = unknown_fields::<U>(&copy);
            if unknown.is_empty() {
                return decode(copy);
            }
            unknown
        };
        if !unknown.is_empty() {
            return Err(unknown_fields_status(&unknown));
        }
        decode(buf)
    }
}

/// One whole request message, decoded as [`StrictDecoder`] decodes it: `serve`'s hot read,
/// which answers without tonic's codec, refuses and reports exactly as every other call.
pub fn decode_strict<U: Message + Name + Default>(message: &[u8]) -> Result<U, Status> {
    let unknown = unknown_fields::<U>(message);
    if !unknown.is_empty() {
        return Err(unknown_fields_status(&unknown));
    }
    decode_message(message)
}

fn unknown_fields_status(unknown: &[UnknownField]) -> Status {
    Status::invalid_argument(format!(
        "the request has fields Armada's API does not define, refused rather than dropped: {}",
        listed_unknown_fields(unknown)
    ))
}

fn decode<U: Message + Default>(buf: impl Buf) -> Result<Option<U>, Status> {
    decode_message(buf).map(Some)
}

fn decode_message<U: Message + Default>(buf: impl Buf) -> Result<U, Status> {
    // As grpc-go answers a request it cannot unmarshal.
    U::decode(buf).map_err(|e| Status::internal(format!("grpc: error unmarshalling request: {e}")))
}
