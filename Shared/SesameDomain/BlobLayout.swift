/// How a blob's bytes are kept at rest: cut into chunks of `chunkBytes`, each sealed on its own
/// (envelope encryption, like every other value), so a range is served by opening only the chunks
/// it touches.
///
/// Each chunk's sealing context (`SealingContext.blobChunk`) names its app, its upload and its
/// place, so a chunk moved to another place, another blob or another upload of the same key fails
/// to open.
public enum BlobLayout {
    /// Plaintext bytes per chunk; the last chunk holds the rest.
    public static let chunkBytes = 1 << 20

    /// How many chunks hold `size` bytes.
    public static func chunkCount(size: Int64) -> Int {
        Int((size + Int64(chunkBytes) - 1) / Int64(chunkBytes))
    }

    /// The plaintext length chunk `index` must have in a blob of `size` bytes.
    public static func chunkLength(index: Int, size: Int64) -> Int {
        Int(min(Int64(chunkBytes), size - Int64(index) * Int64(chunkBytes)))
    }

    /// The chunks that hold bytes `first...last`.
    public static func chunks(covering first: Int64, _ last: Int64) -> ClosedRange<Int> {
        Int(first / Int64(chunkBytes))...Int(last / Int64(chunkBytes))
    }
}
