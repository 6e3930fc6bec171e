# The report's paper-vs-ours pages: each study's comparison CSV as an HTML table, every row coloured by
# whether it agrees with the paper (`traincost report-table`; `traincost summary` prints the same in a terminal).
#
# Resources: `threads` as each rule says. `mem_mb` (the tool's; job_mem_mb adds Snakemake's own on a cluster, see
# common.smk) is 1.5 x the largest peak of the rule's jobs in a full run (`snakemake --cores 2`, config/config.yaml,
# 25 November 2026; tests/fixtures/benchmarks/full_run.csv), rounded up to 100 MB, or the value measured before on
# the quick config where that is larger; the peak is noted beside each value. Peak = the larger of Snakemake's
# benchmark max_rss of the job's process tree (sampled every 0.5 s for 15 s, then every 30 s, so it can miss a long
# job's peak) and the same tree sampled every 0.5 s throughout by bench/job_peaks.py (the jobs of the run's last
# hour). `runtime` (minutes,
# what a cluster job asks) is 2 x the rule's longest job in that run, which shared 2 cores with other work, plus
# 5 minutes for Snakemake's start on a node. tests/integration/test_rule_resources.py checks both against the table.


rule agreement_table:
    conda:
        TRAINCOST_ENV
    input:
        csv=comparison_csv,
    output:
        html=report(
            "results/{study}/agreement.html",
            caption="../report/agreement.rst",
            category=study_category,
            subcategory="Paper vs ours",
        ),
    wildcard_constraints:
        study="monet|mtrain|tiered",
    threads: 1
    resources:
        mem_mb=job_mem_mb(200),  # full run: peak 118 MB
        runtime=6,  # minutes; full run: longest job 3 s
    log:
        "results/logs/agreement_table/{study}.log",
    benchmark:
        "results/benchmarks/agreement_table/{study}.tsv",
    shell:
        "traincost report-table --study {wildcards.study} --in {input.csv} --out {output.html} > {log} 2>&1"


# The report's page of the run's workloads: which front end built each training step, its size and its check.
rule workloads_page:
    conda:
        TRAINCOST_ENV
    input:
        tables=PLAN.workloads_page_tables(),
    output:
        html=report("results/workloads.html", caption="../report/workloads.rst", category="Workloads"),
    params:
        workloads=PLAN.workloads_page_flags(),
    threads: 1
    resources:
        mem_mb=job_mem_mb(300),  # as agreement_table, with the workloads' tables read one at a time
        runtime=6,  # minutes
    log:
        "results/logs/workloads_page/all.log",
    benchmark:
        "results/benchmarks/workloads_page/all.tsv"
    shell:
        "traincost report-workloads --workload {params.workloads} --out {output.html} > {log} 2>&1"
