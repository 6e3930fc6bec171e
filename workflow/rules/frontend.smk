# torch model → ONNX → training step → primitive graph → Workload IR → memory.


rule export:
    output:
        onnx="results/graphs/{workload}/model.onnx",
    params:
        model=lambda w: workload(w)["model"],
        batch=lambda w: workload(w)["batch"],
        options=lambda w: json.dumps(workload(w).get("options", {}), sort_keys=True),
        seed=config["seed"],
    threads: workflow.cores  # torch and ONNX Runtime use every core (and VGG-16 / GPT-2 124M ~15 GB)
    log:
        "results/logs/export/{workload}.log",
    shell:
        "traincost export --model {params.model} --batch {params.batch} --options {params.options:q} "
        "--seed {params.seed} --out {output.onnx} > {log} 2>&1"


rule train_graph:
    input:
        onnx=rules.export.output.onnx,
    output:
        onnx="results/graphs/{workload}/train_step.onnx",
    params:
        optimizer=optimizer_flags,
        seed=config["seed"],
    threads: workflow.cores
    log:
        "results/logs/train_graph/{workload}.log",
    shell:
        "traincost train-graph --in {input.onnx} {params.optimizer} --seed {params.seed} --out {output.onnx} > {log} 2>&1"


rule decompose:
    input:
        onnx=rules.train_graph.output.onnx,
    output:
        onnx="results/graphs/{workload}/train_step.decomposed.onnx",
        histogram="results/graphs/{workload}/op_histogram.parquet",
    params:
        seed=config["seed"],
        verify=lambda w: "" if workload(w).get("verify", True) else "--no-verify",
    threads: workflow.cores
    log:
        "results/logs/decompose/{workload}.log",
    shell:
        "traincost decompose --in {input.onnx} --seed {params.seed} {params.verify} --histogram {output.histogram} "
        "--out {output.onnx} > {log} 2>&1"


rule lower:
    input:
        onnx=rules.decompose.output.onnx,
    output:
        ops="results/workloads/{workload}/ops.parquet",
        tensors="results/workloads/{workload}/tensors.parquet",
    log:
        "results/logs/lower/{workload}.log",
    shell:
        "traincost lower --in {input.onnx} --ops {output.ops} --tensors {output.tensors} > {log} 2>&1"


rule memory:
    input:
        ops=rules.lower.output.ops,
        tensors=rules.lower.output.tensors,
    output:
        table="results/workloads/{workload}/memory.parquet",
    log:
        "results/logs/memory/{workload}.log",
    shell:
        "traincost memory --ops {input.ops} --tensors {input.tensors} --out {output.table} > {log} 2>&1"
