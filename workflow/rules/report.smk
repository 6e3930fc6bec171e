# The report's paper-vs-ours pages: each study's comparison CSV as an HTML table, every row coloured by
# whether it agrees with the paper (`traincost report-table`; `traincost summary` prints the same in a terminal).
#
# Resources: `threads` as each rule says; `mem_mb` is 1.5 x the peak resident memory measured on the quick
# config's jobs (config/quick.yaml, 2 cores), rounded up to 100 MB. Peak = the larger of GNU time's maximum RSS
# of the `traincost` call (`/usr/bin/time -v`) and Snakemake's benchmark max_rss of the job's process tree
# (results/benchmarks/); the peak is noted beside each value. Every run writes its own benchmarks.


rule agreement_table:
    conda:
        TRAINCOST_ENV
    input:
        csv=lambda w: comparison_csvs()[w.study],
    output:
        html=report(
            "results/{study}/agreement.html",
            caption="../report/agreement.rst",
            category=lambda w: STUDY_CATEGORIES[w.study],
            subcategory="Paper vs ours",
        ),
    wildcard_constraints:
        study="monet|mtrain|tiered",
    threads: 1
    resources:
        mem_mb=job_mem_mb(200),  # peak 115 MB
    log:
        "results/logs/agreement_table/{study}.log",
    benchmark:
        "results/benchmarks/agreement_table/{study}.tsv",
    shell:
        "traincost report-table --study {wildcards.study} --in {input.csv} --out {output.html} > {log} 2>&1"
