// What a mount shows besides the tensors, so that its root is a model folder that frameworks load: the side files
// (config.json, the tokenizer files, README.md...) at the root, and the source's own files in source/. And, for a
// folder that holds several models, the candidates to pick one from.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/source_object.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs {

struct FolderFile {
    std::string path;  // '/'-separated, relative to the source's folder; a side file's is its bare name
    std::shared_ptr<const SourceObject> object;  // opened at mount: its size and mtime are the tree's
    // Why it could not be opened at mount ("": it was). Then `object` has no bytes and fails every read with this
    // reason, so that the file is seen failing rather than missing.
    std::string problem;
};

// One model of a folder that holds several: `path` is what SOURCE/PATH or `-o model=PATH` names to mount it.
struct ModelCandidate {
    std::string path;
    std::string format;               // "safetensors", "pytorch" or "gguf"
    std::vector<std::string> files;   // the files it is made of, as far as their names tell
};

struct ModelFolder {
    // Sorted by name; never a weight file, nor one named like the root's own entries (model.json, source...).
    std::vector<FolderFile> side_files;
    std::vector<FolderFile> source_files;  // sorted by path
    std::vector<ModelCandidate> models;    // the candidates when the folder holds several models; else empty
};

// The files of `folder` that could not be opened at mount, each once (a side file of a folder is in source/ too).
std::vector<const FolderFile*> unopened_files(const ModelFolder& folder);

// Weight files and weight indexes, which never appear as side files (the root's one weight file is
// model.safetensors): *.safetensors, *.safetensors.index.json, *.bin, *.bin.index.json, *.pt, *.pth, *.gguf.
bool is_weight_file(std::string_view name);

// The side files of a listing of a folder (paths relative to it): the files directly in it but weights and those
// named like the root's own entries (model.json, model.safetensors, .tensorfs, source).
std::vector<std::string> side_file_names(const std::vector<std::string>& listing);

// The names probed next to a SOURCE that names one file (a web server has no listing).
const std::vector<std::string>& probed_side_files();

// Files of a folder looked for already, by path: the object opened, or nullptr for one that is not there. Opening a
// model looks for its config; its side files are not looked for again (each look is a request for a remote folder).
using LookedUpFiles = std::map<std::string, std::shared_ptr<const SourceObject>>;

// A folder SOURCE: every file under it in source/ (one recursive listing), the ones directly in it but weights as
// side files. Files the catalog already opened (`catalog` may be nullptr) or `looked_up` holds are not opened again.
// Files that vanish are left out; those that cannot be opened are kept with their problem.
ModelFolder files_of_folder(const SourceFolder& folder, const Catalog* catalog, const LookedUpFiles& looked_up = {});

// A SOURCE that names the file `file` of `folder`: that file and the catalog's files (shards, split parts) in
// source/, and as side files those of probed_side_files() that the folder has (a missing one is no error; one that
// cannot be opened is kept with its problem).
ModelFolder files_of_file(const SourceFolder& folder, const std::string& file, const Catalog& catalog,
                          const LookedUpFiles& looked_up = {});

// Whether a '/'-separated relative path stays inside its folder and names something: no empty, "." or ".."
// segment, no NUL.
bool is_plain_relative_path(std::string_view path);

}  // namespace tensorfs
