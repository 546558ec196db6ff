// Prints, as one JSON object, what @huggingface/gguf (the Hugging Face Hub's own GGUF reader, independent of
// tensorfs and ggml) reads from the GGUF file at the path given: every metadata key with its value and type, the
// tensor infos, and where the tensor data starts. 64-bit integers are printed as decimal strings.
//
// usage: node gguf_info.js FILE.gguf
"use strict";
const { gguf } = require("@huggingface/gguf");

async function main() {
    const { typedMetadata, tensorInfos, tensorDataOffset } =
        await gguf(process.argv[2], { allowLocalFile: true, typedMetadata: true });
    const exact = (_, value) => (typeof value === "bigint" ? value.toString() : value);
    process.stdout.write(JSON.stringify({ metadata: typedMetadata, tensors: tensorInfos, tensorDataOffset }, exact));
}

main().catch((error) => {
    process.stderr.write(`gguf_info.js: ${process.argv[2]}: ${error.message}\n`);
    process.exit(1);
});
