"""The pipeline's steps that run once per pipeline (issue 24): the index step (`index_step`) and the retrieve step
(`retrieve_step`). Each builds its artefact once and hands it to every auditor that reads it, through
`ingestaudit.auditors.base.PipelineContext`; auditors never load a step themselves."""
