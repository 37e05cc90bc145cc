"""Quick start: evaluate an inference function on the StaICC standard (Normal).

Replace `my_inference` with your model: it receives the prompt and the label space
and returns probabilities, logits, or the index of the predicted label.
"""
from StaICC import Normal
from StaICC.backends.reference_model import lexical_icl
from StaICC.report import format_table


def my_inference(prompt, label_space):
    # A real model would score each label word after the prompt; here the built-in
    # lexical in-context learner stands in for it.
    return lexical_icl(prompt, label_space)


benchmark = Normal()                     # the 10 standard datasets, k = 4
print(benchmark[1].prompt_set()[0])      # the first prompt of rotten_tomatoes
print()
result = benchmark(my_inference)         # {"Divided results": ..., "Averaged results": ...}
print(format_table(result, "Normal, lexical reference model"))
print("standard run:", result.metadata["standard"])
