import json

from snakemake.utils import validate


validate(config, schema="../schemas/config.schema.yaml")


def _check_references():
    """Cross-checks the schema cannot express; every problem names its key."""
    problems = []
    for name, workload in config["workloads"].items():
        if workload["optimizer"] not in config["optimizers"]:
            problems.append(
                f"workloads.{name}.optimizer: {workload['optimizer']!r} is not a key of optimizers "
                f"({', '.join(sorted(config['optimizers']))})"
            )
    for i, name in enumerate(config["figure3"]["workloads"]):
        if name not in config["workloads"]:
            problems.append(f"figure3.workloads[{i}]: {name!r} is not a key of workloads")
    if problems:
        raise ValueError("invalid config: " + "; ".join(problems))


_check_references()

WORKLOADS = sorted(config["workloads"])


wildcard_constraints:
    workload="|".join(WORKLOADS),


def workload(wildcards):
    return config["workloads"][wildcards.workload]


def optimizer_flags(wildcards):
    """The optimizer of a workload as `traincost` flags (only the keys the config sets)."""
    spec = config["optimizers"][workload(wildcards)["optimizer"]]
    flags = [f"--optimizer {spec['kind']}"]
    flags += [f"--{key.replace('_', '-')} {value}" for key, value in sorted(spec.items()) if key != "kind"]
    return " ".join(flags)


def get_final_output():
    outputs = expand("results/workloads/{workload}/memory.parquet", workload=WORKLOADS)
    if config["figure3"]["workloads"]:
        outputs += expand("results/monet/figure3.{ext}", ext=["png", "pdf"])
        outputs.append("results/monet/figure3_memory_compare.csv")
    return outputs
