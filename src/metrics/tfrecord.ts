// TFRecord framing, the container of TensorBoard's event files: each record is its length (uint64 LE), the masked
// CRC-32C of those 8 bytes, the data, and the masked CRC-32C of the data (tensorflow/core/lib/io/record_writer).

/** The CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) lookup table. */
const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32C of `bytes` (initial value ~0, final xor ~0), as an unsigned 32-bit number. */
export function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** The masked CRC TFRecord stores: rotate right by 15 and add a constant, so a CRC of CRCs is not trivially zero. */
export function maskedCrc32c(bytes: Uint8Array): number {
  const c = crc32c(bytes);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** One framed record holding `data`. */
export function tfRecord(data: Uint8Array): Buffer {
  const out = Buffer.alloc(8 + 4 + data.length + 4);
  out.writeBigUInt64LE(BigInt(data.length), 0);
  out.writeUInt32LE(maskedCrc32c(out.subarray(0, 8)), 8);
  out.set(data, 12);
  out.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return out;
}
