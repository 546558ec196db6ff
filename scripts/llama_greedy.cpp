// Greedy generation with llama.cpp's C API (llama.h), printing the generated token ids, one a line. Built and run
// by scripts/check-loaders to compare a GGUF read from a tensorfs mount with the same file on disk.
//
// Why not llama.cpp's own llama-simple or llama-completion: they print text, and a random model's byte tokens
// make incomplete UTF-8 that their output holds back, so that the last pieces printed varied from run to run of
// the same model; ids compare exactly. One thread, so that nothing depends on scheduling.
//
// usage: llama_greedy MODEL.gguf mmap|none TOKENS PROMPT
//   mmap: llama.cpp maps the file (its default); none: it reads the file into memory (what --no-mmap was)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "llama.h"

namespace {

void errors_only(ggml_log_level level, const char* text, void*) {
    if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

int fail(const char* path, const char* what) {
    std::fprintf(stderr, "llama_greedy: %s: %s\n", path, what);
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s MODEL.gguf mmap|none TOKENS PROMPT\n", argv[0]);
        return 2;
    }
    const char* path = argv[1];
    const std::string mode = argv[2];
    const int count = std::atoi(argv[3]);
    const std::string prompt = argv[4];
    if ((mode != "mmap" && mode != "none") || count <= 0) return fail(path, "bad load mode or token count");

    llama_log_set(errors_only, nullptr);
    ggml_backend_load_all();
    llama_model_params model_params = llama_model_default_params();
    model_params.load_mode = mode == "mmap" ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
    model_params.progress_callback = [](float, void*) { return true; };  // no progress dots on stderr
    llama_model* model = llama_model_load_from_file(path, model_params);
    if (model == nullptr) return fail(path, "llama.cpp cannot load it");
    const llama_vocab* vocab = llama_model_get_vocab(model);

    const int prompt_length = -llama_tokenize(vocab, prompt.data(), static_cast<int>(prompt.size()), nullptr, 0,
                                              true, true);
    std::vector<llama_token> tokens(static_cast<std::size_t>(prompt_length));
    if (llama_tokenize(vocab, prompt.data(), static_cast<int>(prompt.size()), tokens.data(), prompt_length, true,
                       true) < 0) {
        return fail(path, "cannot tokenize the prompt");
    }

    llama_context_params context_params = llama_context_default_params();
    context_params.n_ctx = static_cast<uint32_t>(prompt_length + count);
    context_params.n_batch = static_cast<uint32_t>(prompt_length);
    context_params.n_threads = 1;
    context_params.n_threads_batch = 1;
    llama_context* context = llama_init_from_model(model, context_params);
    if (context == nullptr) return fail(path, "cannot make a context");
    llama_sampler* sampler = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(sampler, llama_sampler_init_greedy());

    int status = 0;
    llama_token last = 0;
    llama_batch batch = llama_batch_get_one(tokens.data(), prompt_length);
    for (int generated = 0; generated < count; ++generated) {
        if (llama_decode(context, batch) != 0) {
            status = fail(path, "llama_decode failed");
            break;
        }
        last = llama_sampler_sample(sampler, context, -1);
        std::printf("%d\n", last);
        if (llama_vocab_is_eog(vocab, last)) break;
        batch = llama_batch_get_one(&last, 1);
    }
    llama_sampler_free(sampler);
    llama_free(context);
    llama_model_free(model);
    return status;
}
