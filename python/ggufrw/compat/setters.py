"""The typed setters of `GGUFWriter` as a table: a setter's name (without `add_`) and the key it
writes, by the kind of value it takes.

The keys are grouped under their common start, a line that ends in a dot; a row under it is the
setter's name alone when the key ends in that name, else the name and the rest of the key. A key
with `{arch}` is formatted with the writer's architecture; a key with `{id}` takes the setter's
first argument as the id (the value is the second). Kinds ending in `_enum` take an enum member
and write its `.value`.
"""

from __future__ import annotations

SETTERS: dict[str, str] = {
    "string": """
        general.
            type
            sampling_sequence           sampling.sequence
            name
            author
            version
            organization
            finetune
            basename
            description
            quantized_by
            size_label
            license
            license_name                license.name
            license_link                license.link
            url
            doi
            uuid
            repo_url
        general.source.
            source_url                  url
            source_doi                  doi
            source_uuid                 uuid
            source_repo_url             repo_url
        {arch}.
            tensor_data_layout
        tokenizer.ggml.
            tokenizer_model             model
            tokenizer_pre               pre
        clip.
            clip_projector_type         projector_type
            clip_vision_projector_type  vision.projector_type
            clip_audio_projector_type   audio.projector_type
    """,
    "uint32": """
        general.
            quantization_version
            file_type
            base_model_count                 base_model.count
            dataset_count                    dataset.count
        {arch}.
            vocab_size
            context_length
            embedding_length
            embedding_length_out
            features_length
            posnet_embedding_length          posnet.embedding_length
            posnet_block_count               posnet.block_count
            convnext_embedding_length        convnext.embedding_length
            convnext_block_count             convnext.block_count
            shortconv_l_cache                shortconv.l_cache
            block_count
            leading_dense_block_count
            full_attention_interval
            expert_feed_forward_length
            expert_shared_feed_forward_length
            expert_chunk_feed_forward_length
            decoder_start_token_id
            decoder_block_count
            embedding_length_per_layer_input
            altup_active_idx                 altup.active_idx
            altup_num_inputs                 altup.num_inputs
        {arch}.attention.
            key_length
            value_length
            key_length_mla
            value_length_mla
            key_length_swa
            value_length_swa
            indexer_head_count               indexer.head_count
            indexer_key_length               indexer.key_length
            indexer_top_k                    indexer.top_k
            shared_kv_layers
        {arch}.
            expert_count
            expert_used_count
            expert_shared_count
            expert_group_count
            expert_group_used_count
            experts_per_group
            moe_every_n_layers
            moe_latent_size
            nextn_predict_layers
            rescale_every_n_layers
            time_mix_extra_dim
            time_decay_extra_dim
            wkv_head_size                    wkv.head_size
            token_shift_count
            interleave_moe_layer_step
        {arch}.attention.
            group_norm_groups
            q_lora_rank
            kv_lora_rank
            decay_lora_rank
            iclr_lora_rank
            value_residual_mix_lora_rank
            gate_lora_rank
            relative_attn_buckets_count      relative_buckets_count
            sliding_window
            attn_temperature_length          temperature_length
        {arch}.
            num_deepstack_layers             n_deepstack_layers
            rope_dimension_count             rope.dimension_count
            rope_dimension_count_swa         rope.dimension_count_swa
            rope_scaling_orig_ctx_len        rope.scaling.original_context_length
            ssm_conv_kernel                  ssm.conv_kernel
            ssm_inner_size                   ssm.inner_size
            ssm_state_size                   ssm.state_size
            ssm_time_step_rank               ssm.time_step_rank
            ssm_group_count                  ssm.group_count
            kda_head_dim                     kda.head_dim
        tokenizer.ggml.
            token_type_count
            bos_token_id
            eos_token_id
            unk_token_id                     unknown_token_id
            sep_token_id                     seperator_token_id
            pad_token_id                     padding_token_id
            mask_token_id
            eot_token_id
            eom_token_id
        clip.vision.
            vision_projection_dim            projection_dim
            vision_patch_size                patch_size
            vision_embedding_length          embedding_length
            vision_feed_forward_length       feed_forward_length
            vision_block_count               block_count
            vision_head_count                attention.head_count
            vision_image_size                image_size
            vision_max_pixels                image_max_pixels
            vision_min_pixels                image_min_pixels
            vision_preproc_max_tiles         preproc_max_tiles
            vision_preproc_min_tiles         preproc_min_tiles
            vision_preproc_image_size        preproc_image_size
            vision_spatial_merge_size        spatial_merge_size
            vision_projector_scale_factor    projector.scale_factor
            vision_n_wa_pattern              n_wa_pattern
            vision_window_size               window_size
            vision_sam_layers_count          sam.block_count
            vision_sam_embedding_length      sam.embedding_length
            vision_sam_head_count            sam.head_count
        clip.audio.
            audio_projection_dim             projection_dim
            audio_embedding_length           embedding_length
            audio_feed_forward_length        feed_forward_length
            audio_block_count                block_count
            audio_head_count                 attention.head_count
            audio_num_mel_bins               num_mel_bins
            audio_stack_factor               projector.stack_factor
            audio_chunk_size                 chunk_size
            audio_conv_kernel_size           conv_kernel_size
            audio_max_pos_emb                max_pos_emb
            audio_projector_window_size      projector.window_size
            audio_projector_downsample_rate  projector.downsample_rate
            audio_projector_head_count       projector.head_count
    """,
    "int32": """
        general.sampling.
            sampling_top_k           top_k
            sampling_penalty_last_n  penalty_last_n
            sampling_mirostat        mirostat
    """,
    "float32": """
        general.sampling.
            sampling_top_p                  top_p
            sampling_min_p                  min_p
            sampling_xtc_probability        xtc_probability
            sampling_xtc_threshold          xtc_threshold
            sampling_temp                   temp
            sampling_penalty_repeat         penalty_repeat
            sampling_mirostat_tau           mirostat_tau
            sampling_mirostat_eta           mirostat_eta
        {arch}.attention.
            max_alibi_bias
            clamp_kqv
        {arch}.
            logit_scale
            attn_logit_softcapping
            router_logit_softcapping
            final_logit_softcapping
            expert_weights_scale
            expert_group_scale
            residual_scale
            embedding_scale
            layer_norm_eps                  attention.layer_norm_epsilon
            layer_norm_rms_eps              attention.layer_norm_rms_epsilon
            group_norm_eps                  attention.group_norm_epsilon
            rope_freq_base_swa              rope.freq_base_swa
            attention_scale                 attention.scale
            attn_output_scale               attention.output_scale
            attn_temperature_scale          attention.temperature_scale
            rope_freq_base                  rope.freq_base
        {arch}.rope.scaling.
            rope_scaling_factor             factor
            rope_scaling_alpha              alpha
            rope_scaling_attn_factors       attn_factor
            rope_scaling_yarn_log_mul       yarn_log_multiplier
            rope_scaling_yarn_ext_factor    yarn_ext_factor
            rope_scaling_yarn_attn_factor   yarn_attn_factor
            rope_scaling_yarn_beta_fast     yarn_beta_fast
            rope_scaling_yarn_beta_slow     yarn_beta_slow
        clip.
            vision_attention_layernorm_eps  vision.attention.layer_norm_epsilon
            audio_attention_layernorm_eps   audio.attention.layer_norm_epsilon
    """,
    "string_id": """
        general.base_model.{id}.
            base_model_name          name
            base_model_author        author
            base_model_version       version
            base_model_organization  organization
            base_model_description   description
            base_model_url           url
            base_model_doi           doi
            base_model_uuid          uuid
            base_model_repo_url      repo_url
        general.dataset.{id}.
            dataset_name             name
            dataset_author           author
            dataset_version          version
            dataset_organization     organization
            dataset_description      description
            dataset_url              url
            dataset_doi              doi
            dataset_uuid             uuid
            dataset_repo_url         repo_url
    """,
    "array": """
        general.
            tags
            languages
        {arch}.
            activation_sparsity_scale
            swiglu_clamp_exp
            swiglu_clamp_shexp
            rope_dimension_sections     rope.dimension_sections
        tokenizer.ggml.
            token_list                  tokens
            token_merges                merges
            token_types                 token_type
            token_scores                scores
            precompiled_charsmap
        {arch}.
            classifier_output_labels    classifier.output_labels
        clip.vision.
            vision_image_mean           image_mean
            vision_image_std            image_std
            vision_wa_layer_indexes     wa_layer_indexes
            vision_is_deepstack_layers  is_deepstack_layers
        xielu.
            xielu_alpha_p               alpha_p
            xielu_alpha_n               alpha_n
            xielu_beta                  beta
            xielu_eps                   eps
    """,
    "bool": """
        {arch}.
            parallel_residual        use_parallel_residual
            expert_weights_norm
            swin_norm
            causal_attention         attention.causal
            rope_scaling_finetuned   rope.scaling.finetuned
            ssm_dt_b_c_rms           ssm.dt_b_c_rms
        tokenizer.ggml.
            add_bos_token
            add_eos_token
            add_sep_token
            add_space_prefix
            remove_extra_whitespaces
        clip.
            clip_has_vision_encoder  has_vision_encoder
            clip_has_audio_encoder   has_audio_encoder
            vision_use_gelu          use_gelu
            vision_use_silu          use_silu
        diffusion.
            diffusion_shift_logits   shift_logits
    """,
    "uint32_enum": """
        {arch}.
            expert_gating_func
            pooling_type
    """,
    "string_enum": """
        {arch}.
            rope_scaling_type  rope.scaling.type
    """,
}


def setters() -> list[tuple[str, str, str]]:
    """`(kind, name, key)` for every row of the table."""
    rows = []
    for kind, text in SETTERS.items():
        prefix = ""
        for line in text.splitlines():
            words = line.split()
            if len(words) == 1 and words[0].endswith("."):
                prefix = words[0]
            elif words:
                name, rest = (words[0], words[0]) if len(words) == 1 else words
                rows.append((kind, name, prefix + rest))
    return rows
