// MRF1 frame bytes (spec lmdb.md section 6): "MRF1", u32 LE header length, JSON
// header, zero padding to 8, then little-endian column buffers at 8-aligned
// offsets, which this decoder views in place (no copy).

const ARRAYS = {
  f64: Float64Array, f32: Float32Array, i8: Int8Array, i16: Int16Array, i32: Int32Array,
  i64: BigInt64Array, u8: Uint8Array, u16: Uint16Array, u32: Uint32Array, u64: BigUint64Array,
  bool: Uint8Array,
};

export function decodeFrame(buffer) {
  if (buffer.byteLength < 8) throw new Error("MRF1: shorter than 8 bytes");
  const magic = new TextDecoder().decode(new Uint8Array(buffer, 0, 4));
  if (magic !== "MRF1") throw new Error(`MRF1: bad magic ${JSON.stringify(magic)}`);
  const headerLength = new DataView(buffer).getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, headerLength)));
  const payload = Math.ceil((8 + headerLength) / 8) * 8;
  const blocks = {};
  for (const [name, block] of Object.entries(header.blocks ?? {})) {
    const columns = {};
    for (const [key, column] of Object.entries(block.columns ?? {})) {
      columns[key] = columnValues(buffer, payload, column, `${name}/${key}`);
    }
    blocks[name] = { count: block.count, columns };
  }
  return { ...header, blocks };
}

function columnValues(buffer, payload, column, path) {
  if (column.dtype === "string") return column.values;
  const kind = ARRAYS[column.dtype];
  if (!kind) return null; // complex columns: not drawn by this page
  const length = column.shape.reduce((a, b) => a * b, 1);
  const start = payload + column.offset;
  if (start + length * kind.BYTES_PER_ELEMENT > buffer.byteLength) {
    throw new Error(`MRF1: ${path} runs past the end of the value`);
  }
  return new kind(buffer, start, length);
}
