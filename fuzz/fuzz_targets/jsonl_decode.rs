//! Fuzz target: the JSON Lines history decoder (docs/simulate.md's bulk input). Each input line goes
//! through both decoders. Properties beyond "does not panic": the typed fast path accepts a
//! line only if the strict decoder accepts it too, with the same history (the fast path
//! must be a subset, or a valid-looking line would replay differently from its YAML twin);
//! `decode_line` answers exactly what the strict decoder answers, so a line the fast path
//! gives up on is never lost nor reported differently; and a worker's [`Scratch`], decoding
//! every line of the input into the same reused history, answers the same for each line, so
//! nothing of an earlier line (a field, a run, a container, a string) leaks into a later one.
//!
//! Seed it with real lines, e.g.:
//!   mkdir -p corpus/jsonl_decode && python3 ../scripts/gen-histories.py --realistic 200 \
//!     | split -l 4 - corpus/jsonl_decode/lines-

#![no_main]

use libfuzzer_sys::fuzz_target;
use retryctl::replay::decode::{decode_fast, decode_line, decode_line_strict, Scratch};

fuzz_target!(|data: &[u8]| {
    let mut scratch = Scratch::default();
    for line in data.split(|&b| b == b'\n') {
        let strict = decode_line_strict(line, 7);
        if let Some(fast) = decode_fast(line) {
            match &strict {
                Ok(h) => assert_eq!(&fast, h, "the fast path decoded a line differently"),
                Err(e) => panic!("the fast path accepted a line the strict decoder rejects: {e}"),
            }
        }
        assert_eq!(
            decode_line(line, 7),
            strict,
            "decode_line disagrees with the strict decoder"
        );
        assert_eq!(
            scratch.decode(line, 7).map(|h| h.clone()),
            strict,
            "a reused scratch history decoded a line differently"
        );
    }
});
