// A SOURCE argument (file, index, folder, split part, URL, hf:// address, s3://) turned into what a mount shows, in
// three steps: where it is, which model it names (its Catalog, as the interface contract's rules pick it), and the
// files besides that model. The engine (engine.hpp) takes these steps for every front end.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorfs/catalog.hpp"
#include "tensorfs/model_folder.hpp"
#include "tensorfs/source_options.hpp"

namespace tensorfs {

// Where SOURCE is: its folder, and the file it names there. Throws SourceError for a local path that names
// nothing, or an address that does not parse; nothing is fetched yet.
SourceLocation locate_source(const std::string& source, const SourceOptions& options);

// The model of a SOURCE that a mount shows: the file SOURCE names, the file `model` (`-o model=PATH`) picks in a
// folder SOURCE, or the folder's one model by the folder rule. A folder that holds several models and no `model`
// gives no catalog, and the candidates.
struct ModelChoice {
    std::optional<Catalog> catalog;
    std::vector<ModelCandidate> candidates;  // when there is no catalog
    LookedUpFiles looked_up;                 // the files of the folder it looked for besides the weights (the config)
};

// Parses and checks every header rule. Throws SourceError listing the problems found (a remote source that
// cannot be reached, is not found or refuses the credentials is one such problem), and for a `model` outside the
// folder or with a SOURCE that names a file.
ModelChoice choose_model(const SourceLocation& location, const std::string& source, const std::string& model);

// The files besides the model (side files, source/), with the candidates of a folder of several models. `catalog`:
// the chosen model's (nullptr when there is none); `looked_up`: ModelChoice's.
ModelFolder files_besides(const SourceLocation& location, const Catalog* catalog,
                          const std::vector<ModelCandidate>& candidates, const LookedUpFiles& looked_up);

// The one message of a folder of several models, for every front end, after the SOURCE it names: "holds N models
// (A, B); pick one with PICK, or name its file as SOURCE". `pick` is how the front end picks one ("--model PATH",
// "model=PATH").
std::string several_models(const std::vector<ModelCandidate>& candidates, std::string_view pick);

// The model's catalog in one call (the tests, the fuzzers, the benchmarks): a folder of several models is refused
// with several_models()'s message.
Catalog open_catalog(const std::string& source, const SourceOptions& options = {});

}  // namespace tensorfs
