"""Display names of TM-Training's workloads and placement policies, in the paper's order."""

__all__ = ["POLICY_NAMES", "WORKLOAD_NAMES"]

WORKLOAD_NAMES = {
    "bert_large": "BERT-Large",
    "t5_11b": "T5",
    "chinchilla_70b": "Chinchilla",
    "gpt3_175b": "GPT-3",
    "palm_540b": "PaLM",
}
POLICY_NAMES = {
    "hbm_only": "HBM-only",
    "hor_off": "Hor_Off",
    "hor_on": "Hor_On",
    "ver_off": "Ver_Off",
    "ver_on": "Ver_On",
    "sentinel": "Sentinel",
    "autotm": "AutoTM",
    "deeptm": "DeepTM",
    "tm_training": "TM-Training",
    "tm_training_off": "TM-Training_Off",
    "ideal": "Ideal",
}
