# torch model → ONNX → training step → primitive graph → Workload IR → memory.
#
# Resources: `threads` as each rule says; `mem_mb` is 1.5 x the peak resident memory measured on the quick
# config's jobs (config/quick.yaml, 2 cores), rounded up to 100 MB. Peak = the larger of GNU time's maximum RSS
# of the `traincost` call (`/usr/bin/time -v`) and Snakemake's benchmark max_rss of the job's process tree
# (results/benchmarks/); the peak is noted beside each value. Every run writes its own benchmarks.
# Memory grows with the model: the quick config's largest is ResNet-50 (batch 1). The full config's GPT-2 124M,
# VGG-16, AlexNet and ResNet-50 at batch 8 were measured on their own (FRONTEND_PEAK_MB in common.smk; GPT-2
# 124M's training graph 3.9 GB and its unverified decomposition 3.6 GB, measured after the weights stopped
# being copied and shapes stopped being recorded by execution; the other values predate that and are upper
# bounds). Not measured: ResNet-18, ResNet-56, Tiny-YOLOv3 and the CIFAR VGG-16-BN, which have fewer
# parameters than ResNet-50 and are expected within its values.


rule export:
    conda:
        TRAINCOST_ENV
    input:
        model_files,
    output:
        onnx="results/graphs/{workload}/model.onnx",
    params:
        model=model_flags,
        batch=lambda w: workload(w)["batch"],
        seed=config["seed"],
    threads: workflow.cores  # torch and ONNX Runtime use every core (and VGG-16 / GPT-2 124M ~15 GB)
    resources:
        mem_mb=frontend_mem_mb("export", 2200),  # peak 1,426 MB: ResNet-50; larger models: common.smk
    log:
        "results/logs/export/{workload}.log",
    benchmark:
        "results/benchmarks/export/{workload}.tsv",
    shell:
        "traincost export {params.model} --batch {params.batch} --seed {params.seed} --out {output.onnx} > {log} 2>&1"


rule train_graph:
    conda:
        TRAINCOST_ENV
    input:
        onnx=rules.export.output.onnx,
    output:
        onnx="results/graphs/{workload}/train_step.onnx",
    params:
        optimizer=optimizer_flags,
        seed=config["seed"],
    threads: workflow.cores
    resources:
        mem_mb=frontend_mem_mb("train_graph", 3600),  # peak 2,368 MB: ResNet-50 with Adam; larger models: common.smk
    log:
        "results/logs/train_graph/{workload}.log",
    benchmark:
        "results/benchmarks/train_graph/{workload}.tsv",
    shell:
        "traincost train-graph --in {input.onnx} {params.optimizer} --seed {params.seed} --out {output.onnx} > {log} 2>&1"


rule decompose:
    conda:
        TRAINCOST_ENV
    input:
        onnx=rules.train_graph.output.onnx,
    output:
        onnx="results/graphs/{workload}/train_step.decomposed.onnx",
        histogram="results/graphs/{workload}/op_histogram.parquet",
        verification="results/graphs/{workload}/verification.parquet",
    params:
        seed=config["seed"],
        verify=lambda w: "" if workload(w).get("verify", True) else "--no-verify",
    threads: workflow.cores
    resources:
        mem_mb=frontend_mem_mb("decompose", 4400),  # peak 2,881 MB: ResNet-50 with Adam, verified by execution; larger models: common.smk
    log:
        "results/logs/decompose/{workload}.log",
    benchmark:
        "results/benchmarks/decompose/{workload}.tsv",
    shell:
        "traincost decompose --in {input.onnx} --seed {params.seed} {params.verify} --histogram {output.histogram} "
        "--verification {output.verification} --out {output.onnx} > {log} 2>&1"


rule lower:
    conda:
        TRAINCOST_ENV
    input:
        onnx=rules.decompose.output.onnx,
    output:
        ops="results/workloads/{workload}/ops.parquet",
        tensors="results/workloads/{workload}/tensors.parquet",
    threads: 1
    resources:
        mem_mb=frontend_mem_mb("lower", 900),  # peak 562 MB: ResNet-50; larger models: common.smk
    log:
        "results/logs/lower/{workload}.log",
    benchmark:
        "results/benchmarks/lower/{workload}.tsv",
    shell:
        "traincost lower --in {input.onnx} --ops {output.ops} --tensors {output.tensors} > {log} 2>&1"


rule memory:
    conda:
        TRAINCOST_ENV
    input:
        ops=rules.lower.output.ops,
        tensors=rules.lower.output.tensors,
    output:
        table="results/workloads/{workload}/memory.parquet",
    threads: 1
    resources:
        mem_mb=job_mem_mb(300),  # peak 156 MB
    log:
        "results/logs/memory/{workload}.log",
    benchmark:
        "results/benchmarks/memory/{workload}.tsv",
    shell:
        "traincost memory --ops {input.ops} --tensors {input.tensors} --out {output.table} > {log} 2>&1"
