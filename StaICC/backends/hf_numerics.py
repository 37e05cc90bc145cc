"""The ``hf`` backend's numerics: what its answers' last bits depend on, and the canary certificate.

The certificate scores a fixed canary of prompts in the standard's form twice, under two pack
compositions: all of them in one call, and each alone, in reverse order.  Under batch-invariant
numerics (``numerics=invariant``) the two agree bit for bit, and the digest of the scores is a
function of the weights, the tokenizer, the software stack and the device only: two runs whose
digests differ did not compute the same numbers for the same prompts, whatever their routes.  It
is recorded in provenance (``numerics.answers.certificate``) and beside a cache's answers, where
``cache merge`` and ``compare`` read it (:func:`~StaICC.backends.numerics.numerics_conflicts`).
"""
import hashlib
import struct
from typing import Any, Dict, List

#: the canary: prompts in the standard's form, three sharing their demonstrations (so packs differ by call)
CANARY_LABELS = ["negative", "positive"]
_DEMONSTRATIONS = ("Review: a gripping, beautifully acted film. sentiment: positive\n"
                   "Review: dull and far too long. sentiment: negative\n")
CANARY = [_DEMONSTRATIONS + "Review: " + text + " sentiment: " for text in (
    "an instant classic.", "i wanted my two hours back.", "uneven but often charming.")] + [
    "Review: the plot never comes together. sentiment: ",
    "Question: who wrote the declaration of independence? Answer type: ",
    "Review: warm, funny and wise. sentiment: positive\nReview: a mess. sentiment: "]


def certificate(scorer: Any) -> Dict[str, Any]:
    """The canary's scores under two compositions: their SHA-256 (of every float's bytes) and whether the two
    compositions agree bit for bit (a record that stays equal run after run: no time in it).  The scorer's
    statistics are left as they were."""
    import dataclasses
    saved = dataclasses.replace(scorer.stats)
    try:
        together = scorer.score(list(CANARY), CANARY_LABELS)
        alone = [scorer.score([prompt], CANARY_LABELS)[0] for prompt in reversed(CANARY)][::-1]
    finally:
        scorer.stats = saved
    digest = hashlib.sha256(b"".join(struct.pack("<d", value) for row in together for value in row)).hexdigest()
    return {"sha256": digest, "prompts": len(CANARY), "compositions_agree": together == alone}


def scorer_numerics(scorer: Any) -> Dict[str, Any]:
    """What the answers' last bits depend on besides the identity (the certificate aside)."""
    from .numerics import device_name
    config = getattr(scorer.model, "config", None)
    record = {"device": device_name(scorer.device), "numerics": scorer.numerics, "packing": scorer.packing,
              "rows_per_forward": scorer.rows_per_forward, "token_budget": scorer.token_budget,
              "attention": getattr(config, "_attn_implementation", None), "switched_off": list(scorer.switched_off)}
    if scorer.numerics == "invariant":
        record["attention"] = "position-aligned (StaICC)"
    return record


def certified_numerics(backend: Any) -> Dict[str, Any]:
    """An ``hf`` backend's numerics record, its certificate computed on first use (not in generate mode)."""
    record = scorer_numerics(backend.scorer)
    if backend.scoring != "generate":
        if getattr(backend, "_certificate", None) is None:
            backend._certificate = certificate(backend.scorer)
        record["certificate"] = backend._certificate
    return record


def describe_certificate(record: Dict[str, Any]) -> List[str]:
    """One phrase per fact of a certificate record, for notices."""
    if not isinstance(record, dict):
        return []
    agree = "agree" if record.get("compositions_agree") else "DIFFER"
    return [f"canary digest {str(record.get('sha256'))[:12]}", f"its two pack compositions {agree} bit for bit"]
