//! Just enough of PNG to read Chromium's screenshots back (8-bit RGB or RGBA, not
//! interlaced): the IDAT chunks through zlib (flate2, already a dependency), then the five
//! row filters of the PNG spec. A test then counts pixels; no image crate needed.

use std::io::Read;

pub struct Image {
    pub width: usize,
    pub height: usize,
    /// RGB of every pixel, row by row.
    pub pixels: Vec<[u8; 3]>,
}

fn be32(b: &[u8]) -> usize {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize
}

/// Decodes `data`, or says why not.
pub fn decode(data: &[u8]) -> Result<Image, String> {
    if data.len() < 8 || &data[..8] != b"\x89PNG\r\n\x1a\n" {
        return Err("not a PNG".into());
    }
    let mut at = 8;
    let (mut width, mut height, mut channels) = (0, 0, 0);
    let mut idat = Vec::new();
    while at + 8 <= data.len() {
        let len = be32(&data[at..]);
        let kind = &data[at + 4..at + 8];
        let body = data.get(at + 8..at + 8 + len).ok_or("truncated chunk")?;
        match kind {
            b"IHDR" => {
                width = be32(body);
                height = be32(&body[4..]);
                let (depth, color, interlace) = (body[8], body[9], body[12]);
                channels = match (depth, color) {
                    (8, 2) => 3,
                    (8, 6) => 4,
                    _ => return Err(format!("bit depth {depth}, colour type {color}: not read here")),
                };
                if interlace != 0 {
                    return Err("interlaced".into());
                }
            }
            b"IDAT" => idat.extend_from_slice(body),
            b"IEND" => break,
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .map_err(|e| e.to_string())?;
    let stride = width * channels;
    if raw.len() != height * (stride + 1) {
        return Err(format!("{} bytes of pixel data for {width}×{height}", raw.len()));
    }
    let mut prev = vec![0u8; stride];
    let mut pixels = Vec::with_capacity(width * height);
    for y in 0..height {
        let row = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        let (filter, src) = (row[0], &row[1..]);
        let mut cur = vec![0u8; stride];
        for i in 0..stride {
            let a = if i >= channels { cur[i - channels] } else { 0 };
            let b = prev[i];
            let c = if i >= channels { prev[i - channels] } else { 0 };
            let predicted = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                f => return Err(format!("filter {f}")),
            };
            cur[i] = src[i].wrapping_add(predicted);
        }
        pixels.extend(cur.chunks(channels).map(|p| [p[0], p[1], p[2]]));
        prev = cur;
    }
    Ok(Image { width, height, pixels })
}
